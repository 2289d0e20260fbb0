/**
 * The dashboard's flow builder and Test call in real Chromium, on the real server (child process)
 * with the embedded engines and a fake microphone saying "I would like to book an appointment":
 * the flow is built from an empty canvas (nodes added, renamed, given their words; an edge drawn
 * from greet to book and given keyword chips; a node dragged; a refused node shown as such and
 * deleted), checked one tab away as JSON, and created; an agent on it; from the agents list, Test
 * call opens the agent; the call starts with the signed-in key, the greeting and the
 * user's words appear live, the flow's node moves to `book`, the agent hangs up, the finished call
 * shows with a link to its page. Screenshots at 1200 and 390 px; no console errors. Then the
 * builder's phone nodes (a transfer_call and a press_digit node, their fields checked on the node,
 * their failure edges drawn) and the flow's name, saved exactly and shown on the flow's page and list.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { hasPocketsphinx, NO_POCKETSPHINX } from '../voice/capabilities.ts';
import { ARTIFACTS_DIR, type Browser, NOT_BUILT, NO_CHROMIUM, SILENCE_BEFORE_REQUEST_MS, assertFitsWidth, eventually, launchBrowser, screenshot, speechWav } from './browser.ts';
import type { Page } from 'playwright-core';
import { type WebServer, startWebServer } from './server.ts';

const skip = NO_CHROMIUM || NOT_BUILT || (hasPocketsphinx() ? false : NO_POCKETSPHINX);

describe('dashboard test call', { skip, timeout: 180_000 }, () => {
  let web: WebServer;
  let browser: Browser;

  before(async () => {
    web = await startWebServer();
    // Silence while the greeting plays, the request, then a long silence (Chromium loops the file).
    const wav = await speechWav(path.join(ARTIFACTS_DIR, 'test-call-microphone.wav'), 'i would like to book an appointment', SILENCE_BEFORE_REQUEST_MS, 20_000);
    browser = await launchBrowser({ microphoneWav: wav });
  });

  after(async () => {
    await browser?.close();
    await web?.close();
  });

  test('build a flow from an empty canvas, talk to an agent on it from the dashboard, live transcript and node, then the finished call', async () => {
    const page = await browser.newPage();
    await page.setViewportSize({ width: 1200, height: 900 });
    await page.goto(`${web.baseUrl}/dashboard`);
    await page.fill('#api-key', web.apiKey);
    await page.click('#sign-in-submit');
    await page.waitForSelector('#calls');
    const flowId = await buildFlow(page);
    const agent = await web.api('POST', '/create-agent', { agent_name: 'Reception', response_engine: { type: 'conversation_flow', conversation_flow_id: flowId } });
    assert.equal(agent.status, 201, JSON.stringify(agent.json));
    const agentId: string = agent.json.agent_id;
    await page.reload();
    await eventually(async () => /Reception/.test((await page.textContent('#flow-agents')) ?? ''), 5000, 'the flow page naming the agent that uses it');

    await page.setViewportSize({ width: 390, height: 844 });
    await page.click('a[data-nav="calls"]');
    await page.waitForSelector('#calls-empty');
    assert.match((await page.textContent('#calls-empty')) ?? '', /No calls yet/);

    await page.click('a[data-nav="overview"]');
    await page.waitForSelector('#overview-empty');
    assert.match((await page.textContent('#latency-over-time')) ?? '', /No replies measured/);
    await assertFitsWidth(page, 390);
    await page.click('a[data-nav="agents"]');
    await page.click(`tr[data-id="${agentId}"] button[data-action="test-call"]`);
    await page.waitForSelector('#test-call[data-phase="idle"]');
    assert.ok(page.url().endsWith(`#/agents/${agentId}/test`));
    await assertFitsWidth(page, 390);
    await page.click('#test-call-start');
    await page.waitForSelector('#test-call[data-phase="in_call"]', { timeout: 15_000 });
    await eventually(async () => /thanks for calling Acme/i.test((await page.textContent('#test-call-transcript')) ?? ''), 15_000, 'the greeting, live');
    await screenshot(page, 'dashboard-test-call-390');
    await page.setViewportSize({ width: 1200, height: 900 });

    const userLine = await eventually(async () => {
      const lines = await page.locator('#test-call-transcript li[data-role="user"]').allTextContents();
      return lines.find((l) => /appointment/i.test(l)) ?? null;
    }, 30_000, "the user's words, live");
    assert.match(userLine, /would like/i);
    await eventually(async () => (await page.locator('#test-call-nodes li').allTextContents()).includes('book'), 15_000, 'the node transition to book');
    await screenshot(page, 'dashboard-test-call-live');

    // The agent hangs up at the end node; the finished call is read until final, with its link.
    await page.waitForSelector('#test-call[data-phase="ended"]', { timeout: 30_000 });
    assert.equal(await page.textContent('#test-call-reason'), 'agent_hangup');
    await page.waitForSelector('#test-call-finished[data-status="ended"]', { timeout: 20_000 });
    assert.deepEqual(await page.locator('#test-call-nodes li').allTextContents(), ['greet', 'book']);
    await screenshot(page, 'dashboard-test-call-finished');
    const calls = (await web.api('POST', '/v2/list-calls', {})).json as { call_id: string; metadata: Record<string, unknown> | null }[];
    assert.equal(calls.length, 1);
    assert.deepEqual(calls[0]!.metadata, { source: 'switchboard-dashboard' });
    await page.click('#test-call-link');
    await page.waitForSelector('#call-status');
    assert.ok(page.url().endsWith(`#/calls/${calls[0]!.call_id}`));
    assert.match((await page.textContent('#call-transcript')) ?? '', /appointment/i);
    // The test call used the SDK's default, WebRTC; the call page says how it was carried.
    assert.match((await page.textContent('#call-media')) ?? '', /^webrtc, opus 48 kHz; in \d+ packets/);
    await page.waitForSelector('audio#recording');

    // Expected: the 404 of GET /list-voices when a server has no list (the agent form asks), and
    // the 400 of the flow the builder saved with a node the server refuses (on purpose, above).
    assert.deepEqual(browser.errors.filter((e) => !/status of 404 .*\/list-voices/.test(e) && !/status of 400 .*\/create-conversation-flow\]/.test(e)), []);
    await page.close();
  });

  test("the builder's phone nodes, a PIN's digit bounds and the flow's name: a transfer_call and a press_digit node added, their fields and failure edges edited, saved exactly", async () => {
    const page = await browser.newPage();
    await page.setViewportSize({ width: 1200, height: 900 });
    await page.goto(`${web.baseUrl}/dashboard`);
    await page.fill('#api-key', web.apiKey);
    await page.click('#sign-in-submit');
    await page.waitForSelector('#calls');
    await page.click('a[data-nav="flows"]');
    await page.click('#new-resource');
    await page.click('#flow-templates button[data-template="empty"]');
    await page.waitForSelector('#builder-empty');
    await page.fill('#flow-name', 'Front desk');
    const addNode = async (type: string, id: string) => {
      await page.selectOption('#builder-new-type', type);
      await page.click('#builder-add-node');
      await page.fill('#node-id', id);
      await page.press('#node-id', 'Tab');
      await page.waitForSelector(`#builder-panel[data-node="${id}"]`);
    };
    await addNode('end', 'sorry');
    await page.fill('#node-text', 'Sorry, nobody can take your call. Goodbye.');
    // A transfer node: no number yet is an error on the node, before the server is asked.
    await addNode('transfer_call', 'desk');
    await page.waitForSelector('.bnode.invalid[data-node="desk"]');
    assert.match((await page.textContent('#node-phone-problem')) ?? '', /E\.164/);
    await page.fill('#node-transfer-number', '+14155550100');
    await page.waitForSelector('.bnode:not(.invalid)[data-node="desk"]');
    await page.selectOption('#node-transfer-option', 'cold_transfer');
    await page.fill('#node-text', 'Let me put you through.');
    assert.equal(await page.locator('#builder-panel h3', { hasText: 'Edges' }).count(), 0, 'a transfer leaves the call: no edges, only its failure edge');
    // Its handle draws the failure edge.
    await page.click('.bnode[data-node="desk"] button[data-action="connect"]');
    await page.click('.bnode[data-node="sorry"]');
    await page.waitForSelector('#flow-builder g.edge.failure[data-from="desk"][data-to="sorry"]');
    assert.match((await page.textContent('#flow-builder g.edge[data-from="desk"]')) ?? '', /if the transfer fails/);
    // A press_digit node: keys checked on the node, the failure edge chosen in the panel.
    await addNode('press_digit', 'menu');
    assert.equal(await page.locator('#node-text').count(), 0, 'a press_digit node says nothing');
    await page.fill('#node-digits', '1x');
    await page.waitForSelector('.bnode.invalid[data-node="menu"]');
    await page.fill('#node-digits', '1,#');
    await page.waitForSelector('.bnode:not(.invalid)[data-node="menu"]');
    await page.selectOption('#node-failure-edge', 'sorry');
    await page.waitForSelector('#flow-builder g.edge.failure[data-from="menu"][data-to="sorry"]');
    assert.match((await page.textContent('.bnode[data-node="menu"]')) ?? '', /keys 1,#/);
    await page.click('#node-make-start');
    // A node asking for a PIN: a digits variable's bounds, gone when it is retyped.
    await addNode('conversation', 'pin');
    await page.fill('#node-text', 'Your four-digit PIN, please.');
    await page.click('#node-add-variable');
    await page.fill('[data-variable="0"] input[aria-label="Variable name"]', 'pin');
    await page.selectOption('[data-variable="0"] select[aria-label="Variable type"]', 'digits');
    await page.fill('[data-variable="0"] input[aria-label="Fewest digits"]', '6');
    await page.selectOption('[data-variable="0"] select[aria-label="Variable type"]', 'text');
    assert.equal(await page.locator('[data-variable="0"] input[aria-label="Fewest digits"]').count(), 0, 'only a digits variable has bounds');
    await page.selectOption('[data-variable="0"] select[aria-label="Variable type"]', 'digits');
    assert.equal(await page.inputValue('[data-variable="0"] input[aria-label="Fewest digits"]'), '', 'retyped, its bounds went');
    await page.fill('[data-variable="0"] input[aria-label="Fewest digits"]', '4');
    await page.fill('[data-variable="0"] input[aria-label="Most digits"]', '4');
    await page.click('#tab-json');
    const flow = JSON.parse(await page.inputValue('#json-editor'));
    assert.equal(flow.name, 'Front desk');
    assert.equal(flow.start_node_id, 'menu');
    const strip = ({ display_position: _p, ...n }: Record<string, unknown>) => n;
    assert.deepEqual(flow.nodes.map(strip), [
      { id: 'sorry', type: 'end', instruction: { type: 'static_text', text: 'Sorry, nobody can take your call. Goodbye.' } },
      {
        id: 'desk', type: 'transfer_call', transfer_destination: { type: 'predefined', number: '+14155550100' }, transfer_option: { type: 'cold_transfer' },
        instruction: { type: 'static_text', text: 'Let me put you through.' },
        edge: { id: 'edge_1', destination_node_id: 'sorry', transition_condition: { type: 'always' } },
      },
      { id: 'menu', type: 'press_digit', digits: '1,#', edge: { id: 'edge_2', destination_node_id: 'sorry', transition_condition: { type: 'always' } } },
      { id: 'pin', type: 'conversation', instruction: { type: 'static_text', text: 'Your four-digit PIN, please.' }, extract_variables: [{ name: 'pin', type: 'digits', min_digits: 4, max_digits: 4 }] },
    ]);
    await page.click('#tab-form');
    await page.waitForSelector('#flow-builder g.edge.failure[data-from="menu"]');
    await screenshot(page, 'dashboard-flow-builder-phone-nodes');
    await page.click('#save');
    await page.waitForFunction(() => /^#\/flows\/(?!new)[^/]+$/.test(location.hash));
    const flowId = decodeURIComponent(/#\/flows\/([^/]+)$/.exec(page.url())![1]!);
    // Saved exactly as the builder made it, and named on its page and in the list.
    const saved = await web.api('GET', `/get-conversation-flow/${flowId}`);
    assert.deepEqual({ name: saved.json.name, start_node_id: saved.json.start_node_id, nodes: saved.json.nodes }, { name: flow.name, start_node_id: flow.start_node_id, nodes: flow.nodes });
    await eventually(async () => /Front desk/.test((await page.textContent('h1')) ?? ''), 5000, "the flow's page headed by its name");
    await page.waitForSelector('#flow-builder g.edge.failure[data-from="desk"][data-to="sorry"]');
    await page.waitForSelector('#flow-graph g.edge.failure[data-from="menu"][data-to="sorry"]'); // the read-only drawing too
    await page.click('a[data-nav="flows"]');
    await eventually(async () => /Front desk · 4 nodes/.test((await page.textContent(`#resources tr[data-id="${flowId}"]`)) ?? ''), 5000, 'the flow list naming the flow');
    // A new agent's flow choice names it too.
    await page.click('a[data-nav="agents"]');
    await page.click('#new-resource');
    await eventually(async () => /Front desk · /.test((await page.textContent(`#agent-engine-id option[value="${flowId}"]`)) ?? ''), 5000, "the agent form's flow choice naming the flow");
    assert.deepEqual(browser.errors.filter((e) => !/status of 404 .*\/list-voices/.test(e) && !/status of 400 .*\/create-conversation-flow\]/.test(e)), []);
    await page.close();
  });
});

/** Builds greet -> book ("appointment" / "book") in the flow builder from an empty canvas; returns the created flow's id. */
async function buildFlow(page: Page): Promise<string> {
  await page.click('a[data-nav="flows"]');
  await page.click('#new-resource');
  await page.click('#flow-templates button[data-template="empty"]');
  await page.waitForSelector('#builder-empty');
  const addNode = async (type: string, id: string, text: string) => {
    await page.selectOption('#builder-new-type', type);
    await page.click('#builder-add-node');
    await page.fill('#node-id', id);
    await page.press('#node-id', 'Tab'); // renamed on change
    await page.waitForSelector(`#builder-panel[data-node="${id}"]`);
    await page.fill('#node-text', text);
  };
  await addNode('conversation', 'greet', 'Hello, thanks for calling Acme. How can I help?');
  await addNode('end', 'book', 'Your appointment is booked. Goodbye.');
  // Draw the edge: greet's handle, then book.
  await page.click('.bnode[data-node="greet"] button[data-action="connect"]');
  await page.waitForSelector('#builder-connecting');
  await page.click('.bnode[data-node="book"]');
  await page.waitForSelector('#flow-builder g.edge[data-from="greet"][data-to="book"]');
  await page.selectOption('#builder-panel .builder-edge select[data-field="condition"]', 'keyword');
  for (const word of ['appointment', 'book']) {
    await page.fill('#builder-panel .builder-edge input[data-field="keyword"]', word);
    await page.press('#builder-panel .builder-edge input[data-field="keyword"]', 'Enter');
  }
  assert.match((await page.textContent('#flow-builder g.edge[data-from="greet"]')) ?? '', /appointment \/ book/);
  // Drag book to the right: its position is kept.
  const box = (await page.locator('.bnode[data-node="book"]').boundingBox())!;
  await page.mouse.move(box.x + 40, box.y + 20);
  await page.mouse.down();
  await page.mouse.move(box.x + 140, box.y + 60, { steps: 5 });
  await page.mouse.up();
  // A function node with no function: the server refuses it, shown on that node; deleted.
  await page.selectOption('#builder-new-type', 'function');
  await page.click('#builder-add-node');
  await page.click('#save');
  await page.waitForSelector('.bnode.invalid[data-node="node_1"]');
  assert.match((await page.textContent('#builder-node-error')) ?? '', /node_1/);
  await page.click('#node-delete');
  // One tab away: the JSON, exactly what the builder made.
  await page.click('#tab-json');
  const flow = JSON.parse(await page.inputValue('#json-editor'));
  assert.equal(flow.start_node_id, 'greet');
  assert.deepEqual(flow.nodes.map((n: { id: string }) => n.id), ['greet', 'book']);
  assert.deepEqual(flow.nodes[0].edges, [{ id: 'edge_1', destination_node_id: 'book', transition_condition: { type: 'keyword', keywords: ['appointment', 'book'] } }]);
  assert.ok(flow.nodes[1].display_position.x >= 100, JSON.stringify(flow.nodes[1].display_position));
  await page.click('#tab-form');
  await page.waitForSelector('.bnode[data-node="book"]');
  await screenshot(page, 'dashboard-flow-builder');
  await page.click('#save');
  await page.waitForFunction(() => /^#\/flows\/(?!new)[^/]+$/.test(location.hash));
  const flowId = decodeURIComponent(/#\/flows\/([^/]+)$/.exec(page.url())![1]!);
  await page.waitForSelector('#flow-builder .bnode[data-node="book"]');
  return flowId;
}
