// The MLLR bench (bench/mllr.ts) trains with sphinxtrain's bw, which needs the model's mixture
// weights; the Debian model ships them only quantized (sendump). The conversion must give a
// Sphinx-III mixw file bw reads: the header on a 4-byte boundary, the byte-order word, the
// dimensions, and per senone and feature stream weights that sum to one (to within the quantization:
// each weight is stored as -log in steps of 1.0001^1024, about 11 %).
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { sendumpToMixw } from '../../bench/mllr.ts';
import { DEBIAN_MODEL_DIR } from '../../src/providers/pocketsphinx/pocketsphinx.stt.ts';

const SENDUMP = join(DEBIAN_MODEL_DIR, 'en-us', 'sendump');

test('sendump -> mixture_weights: an aligned s3 header, the dimensions, weights summing to one per senone and stream', { skip: !existsSync(SENDUMP) && 'the Debian model (pocketsphinx-en-us) is not installed' }, () => {
  const mixw = sendumpToMixw(readFileSync(SENDUMP));
  const end = mixw.indexOf('endhdr\n') + 'endhdr\n'.length;
  assert.equal(mixw.toString('ascii', 0, 3), 's3\n');
  assert.equal(end % 4, 0);
  assert.equal(mixw.readUInt32LE(end), 0x11223344);
  const [senones, streams, densities, count] = [1, 2, 3, 4].map((i) => mixw.readUInt32LE(end + 4 * i)) as [number, number, number, number];
  assert.equal(streams, 3); // -svspec 0-12/13-25/26-38
  assert.equal(count, senones * streams * densities);
  assert.equal(mixw.length, end + 20 + 4 * count);
  const w = new Float32Array(mixw.buffer.slice(mixw.byteOffset + end + 20, mixw.byteOffset + mixw.length));
  for (const s of [0, Math.floor(senones / 2), senones - 1]) {
    for (let f = 0; f < streams; f++) {
      const sum = w.subarray((s * streams + f) * densities, (s * streams + f + 1) * densities).reduce((a, b) => a + b, 0);
      assert.ok(Math.abs(sum - 1) < 0.12, `senone ${s} stream ${f}: weights sum to ${sum}`);
    }
  }
});
