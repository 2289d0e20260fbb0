// Twilio's wire, without a call: G.711 μ-law, X-Twilio-Signature (Twilio's own published example),
// the media-stream messages and the TwiML we answer with.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeMulaw, encodeMulaw, encodeMulawSample } from '../../../src/media/codec/mulaw.ts';
import { parseFormBody, twilioSignature, verifyTwilioSignature } from '../../../src/media/twilio/signature.ts';
import { connectStreamTwiml, dialTwiml, twilioDialect } from '../../../src/media/twilio/stream-protocol.ts';

describe('G.711 μ-law', () => {
  it('encodes the reference points of the standard and decodes them back', () => {
    assert.equal(encodeMulawSample(0), 0xff);
    assert.equal(encodeMulawSample(32_767), 0x80);
    assert.equal(encodeMulawSample(-32_768), 0x00);
    assert.equal(encodeMulawSample(-1), 0x7f);
    assert.deepEqual([...decodeMulaw(Uint8Array.of(0x00, 0x80, 0xff, 0x7f, 0x0f, 0x8f))], [-32_124, 32_124, 0, 0, -16_764, 16_764]);
    // Every byte decodes to a value that encodes to the same byte (0x7f, negative zero, becomes 0xff).
    const all = Uint8Array.from({ length: 256 }, (_, i) => i);
    const again = encodeMulaw(decodeMulaw(all));
    for (let i = 0; i < 256; i += 1) if (i !== 0x7f) assert.equal(again[i], i, `byte ${i}`);
  });

  it('carries a tone with the codec\'s signal-to-noise ratio (above 30 dB)', () => {
    const pcm = Int16Array.from({ length: 8000 }, (_, i) => Math.round(12_000 * Math.sin((2 * Math.PI * 440 * i) / 8000)));
    const back = decodeMulaw(encodeMulaw(pcm));
    let signal = 0;
    let noise = 0;
    for (let i = 0; i < pcm.length; i += 1) {
      signal += pcm[i]! ** 2;
      noise += (pcm[i]! - back[i]!) ** 2;
    }
    assert.ok(10 * Math.log10(signal / noise) > 30, `SNR ${(10 * Math.log10(signal / noise)).toFixed(1)} dB`);
  });
});

describe('X-Twilio-Signature', () => {
  // twilio.com/docs/usage/security: the documented example request and its signature (the official
  // helper library computes the same).
  const url = 'https://mycompany.com/myapp.php?foo=1&bar=2';
  const params = { CallSid: 'CA1234567890ABCDE', Caller: '+12349013030', Digits: '1234', From: '+12349013030', To: '+18005551212' };

  it("is Twilio's published example", () => {
    assert.equal(twilioSignature('12345', url, params), '0/KCTR6DLpKmkAf8muzZqo1nDgQ=');
    assert.ok(verifyTwilioSignature('12345', '0/KCTR6DLpKmkAf8muzZqo1nDgQ=', url, params));
  });

  it('refuses another token, another URL, a changed parameter, an added one, or none', () => {
    const signature = twilioSignature('12345', url, params);
    assert.equal(verifyTwilioSignature('54321', signature, url, params), false);
    assert.equal(verifyTwilioSignature('12345', signature, 'https://mycompany.com/myapp.php?foo=1&bar=3', params), false);
    assert.equal(verifyTwilioSignature('12345', signature, url, { ...params, Digits: '1235' }), false);
    assert.equal(verifyTwilioSignature('12345', signature, url, { ...params, Extra: '' }), false);
    assert.equal(verifyTwilioSignature('12345', undefined, url, params), false);
    assert.equal(verifyTwilioSignature('12345', '', url, params), false);
  });

  it('holds with the default port shown or not, and over repeated parameters', () => {
    const signature = twilioSignature('12345', url, params);
    assert.ok(verifyTwilioSignature('12345', signature, 'https://mycompany.com:443/myapp.php?foo=1&bar=2', params));
    const form = parseFormBody('b=2&a=1&b=1');
    assert.deepEqual(form, { b: ['2', '1'], a: '1' });
    assert.equal(twilioSignature('t', 'https://x/y', form), twilioSignature('t', 'https://x/y', { a: '1', b: ['1', '2'] }));
  });
});

describe("Twilio's media-stream messages", () => {
  it('reads each message Twilio sends', () => {
    assert.deepEqual(twilioDialect.parse('{"event":"connected","protocol":"Call","version":"1.0.0"}'), { kind: 'connected' });
    const start = {
      event: 'start',
      sequenceNumber: '1',
      streamSid: 'MZ1',
      start: { accountSid: 'AC1', streamSid: 'MZ1', callSid: 'CA1', tracks: ['inbound'], mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 }, customParameters: { a: 'b' } },
    };
    assert.deepEqual(twilioDialect.parse(JSON.stringify(start)), { kind: 'start', streamId: 'MZ1', callId: 'CA1', accountId: 'AC1', encoding: 'audio/x-mulaw', sampleRate: 8000, parameters: { a: 'b' } });
    const media = twilioDialect.parse(JSON.stringify({ event: 'media', sequenceNumber: '3', streamSid: 'MZ1', media: { track: 'inbound', chunk: '2', timestamp: '20', payload: Buffer.from([1, 2, 3]).toString('base64') } }));
    assert.deepEqual(media, { kind: 'media', audio: Buffer.from([1, 2, 3]), chunk: 2, timestampMs: 20 });
    assert.deepEqual(twilioDialect.parse('{"event":"dtmf","streamSid":"MZ1","dtmf":{"track":"inbound_track","digit":"#"}}'), { kind: 'dtmf', digit: '#' });
    assert.deepEqual(twilioDialect.parse('{"event":"mark","streamSid":"MZ1","mark":{"name":"1:20"}}'), { kind: 'mark', name: '1:20' });
    assert.deepEqual(twilioDialect.parse('{"event":"stop","streamSid":"MZ1","stop":{"accountSid":"AC1","callSid":"CA1"}}'), { kind: 'stop' });
    assert.deepEqual(twilioDialect.parse('{"event":"something_new"}'), { kind: 'unknown' });
  });

  it('refuses what is not the protocol: not JSON, a wrong shape, a bad digit, an oversized payload, deep nesting', () => {
    for (const text of ['nope', '[]', '{"event":"media"}', '{"event":"dtmf","dtmf":{"digit":"12"}}', '{"event":"start","streamSid":"MZ1"}', `{"event":"media","media":{"payload":"${'A'.repeat(20_000)}"}}`, `${'['.repeat(100)}${']'.repeat(100)}`, '{"event":42}']) {
      assert.equal(twilioDialect.parse(text), null, text.slice(0, 60));
    }
  });

  it('writes media, mark and clear as Twilio reads them', () => {
    assert.deepEqual(JSON.parse(twilioDialect.media('MZ1', Uint8Array.of(0xff, 0x7f))), { event: 'media', streamSid: 'MZ1', media: { payload: '/38=' } });
    assert.deepEqual(JSON.parse(twilioDialect.mark('MZ1', '1:20')), { event: 'mark', streamSid: 'MZ1', mark: { name: '1:20' } });
    assert.deepEqual(JSON.parse(twilioDialect.clear('MZ1')), { event: 'clear', streamSid: 'MZ1' });
  });

  it('answers TwiML with the stream and its parameters escaped, and dials a number or a SIP URI', () => {
    assert.equal(
      connectStreamTwiml('wss://h/twilio/stream', { t: 'a"<b' }),
      '<?xml version="1.0" encoding="UTF-8"?><Response><Connect><Stream url="wss://h/twilio/stream"><Parameter name="t" value="a&quot;&lt;b"/></Stream></Connect></Response>',
    );
    assert.match(dialTwiml('+14155550100', '+14155550199'), /<Dial callerId="\+14155550199"><Number>\+14155550100<\/Number><\/Dial>/);
    assert.match(dialTwiml('sip:desk@pbx.example.com'), /<Dial><Sip>sip:desk@pbx\.example\.com<\/Sip><\/Dial>/);
  });
});
