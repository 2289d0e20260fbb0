// The real-speech benchmark weighs a candidate decoder setting against ours in the same run
// (DECODER_CANDIDATE_ARGS, bench/real-speech.ts): the variable is read as -flag value pairs, and
// anything else is refused with the variable named, before a decoder is loaded.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { candidateArgsFromEnv } from '../../bench/real-speech.ts';

test('DECODER_CANDIDATE_ARGS: -flag value pairs, none when unset; anything else refused naming the variable', () => {
  assert.deepEqual(candidateArgsFromEnv('-maxhmmpf 3000  -topn 2 '), ['-maxhmmpf', '3000', '-topn', '2']);
  assert.deepEqual(candidateArgsFromEnv(undefined), []);
  assert.deepEqual(candidateArgsFromEnv(''), []);
  assert.deepEqual(candidateArgsFromEnv('-beam 1e-40'), ['-beam', '1e-40']);
  for (const bad of ['-maxhmmpf', '3000 -maxhmmpf', '-topn -2 x', 'maxhmmpf 3000']) {
    assert.throws(() => candidateArgsFromEnv(bad), /DECODER_CANDIDATE_ARGS/, bad);
  }
});
