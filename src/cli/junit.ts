/**
 * A test run as a JUnit XML report (the shape CI systems read: GitLab, Jenkins, GitHub Actions'
 * test reporters): one <testsuite> for the run, one <testcase> per case; a failed case carries a
 * <failure> whose message is its first failing assertion, a case that could not play an <error>,
 * and a skipped assertion is listed in <system-out> (a case is never skipped as a whole).
 */
import type { AssertionResult, TestRun } from '../domain/agent-test.ts';

/** Escapes text for XML attributes and content; drops characters XML 1.0 cannot hold. */
export function xmlEscape(text: string): string {
  return text
    // eslint-disable-next-line no-control-regex
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

const describe = (a: AssertionResult) => `${a.type}: expected ${JSON.stringify(a.expected)}, got ${JSON.stringify(a.actual)}`;

export function junitReport(run: TestRun, suiteName: string): string {
  const seconds = (ms: number) => (ms / 1000).toFixed(3);
  const errors = run.results.filter((r) => r.error !== null).length;
  const failures = run.results.filter((r) => !r.passed && r.error === null).length;
  const total = run.results.reduce((ms, r) => ms + r.duration_ms, 0);
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="${xmlEscape(suiteName)}" tests="${run.results.length}" failures="${failures}" errors="${errors}" time="${seconds(total)}">`,
    `  <testsuite name="${xmlEscape(suiteName)}" tests="${run.results.length}" failures="${failures}" errors="${errors}" skipped="0" time="${seconds(total)}">`,
  ];
  for (const r of run.results) {
    lines.push(`    <testcase classname="${xmlEscape(`${run.agent_id}.v${r.agent_version}`)}" name="${xmlEscape(r.name)}" time="${seconds(r.duration_ms)}">`);
    const failed = r.assertions.filter((a) => !a.passed && a.skipped !== true);
    if (r.error !== null) lines.push(`      <error message="${xmlEscape(r.error)}" type="unplayable"/>`);
    else if (failed.length > 0) {
      lines.push(`      <failure message="${xmlEscape(describe(failed[0]!))}" type="${xmlEscape(failed[0]!.type)}">${xmlEscape(failed.map(describe).join('\n'))}</failure>`);
    }
    const skipped = r.assertions.filter((a) => a.skipped === true).map((a) => `skipped ${a.type}: ${a.detail ?? ''}`);
    const transcript = r.transcript.map((u) => `${u.role === 'agent' ? 'Agent' : 'User'}: ${u.content}${u.cut_off ? ' [cut off]' : ''}`);
    lines.push(`      <system-out>${xmlEscape([...skipped, ...transcript].join('\n'))}</system-out>`);
    lines.push('    </testcase>');
  }
  lines.push('  </testsuite>', '</testsuites>', '');
  return lines.join('\n');
}
