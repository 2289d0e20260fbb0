// A child process for boundary.test.ts: the process guard installed as main.ts installs it, then
// errors thrown and rejected inside a call's scope and outside any. Prints one JSON line per
// crash the scopes saw, then the counter, and exits 0 if it is still alive to do so.
import { Metrics } from '../../src/lib/metrics.ts';
import { createSilentLogger } from '../../src/lib/logger.ts';
import { installProcessGuard, runInCallScope, type CallScope } from '../../src/media/call-scope.ts';

const metrics = new Metrics();
const counter = metrics.counter('switchboard_uncaught_errors_total', 'test', ['kind', 'scope']);
installProcessGuard(createSilentLogger(), counter);
const crashes: Array<{ callId: string; where: string; message: string }> = [];
const scope = (callId: string): CallScope => ({ callId, crash: (where, error) => crashes.push({ callId, where, message: (error as Error).message }) });

runInCallScope(scope('call_a'), () => {
  setTimeout(() => {
    throw new Error('thrown in a timer of call a');
  }, 10);
});
runInCallScope(scope('call_b'), () => {
  void Promise.reject(new Error('rejected in call b'));
});
setTimeout(() => {
  throw new Error('thrown outside any call');
}, 20);
setTimeout(() => {
  for (const c of crashes) process.stdout.write(`${JSON.stringify(c)}\n`);
  void metrics.registry.getSingleMetricAsString('switchboard_uncaught_errors_total').then((text) => {
    process.stdout.write(`${text}\n`);
    process.exit(0);
  });
}, 100);
