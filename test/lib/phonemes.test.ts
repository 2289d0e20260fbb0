// The phonemes of an agent's pronunciation_dictionary (issue 26): CMU ARPAbet parsed, IPA converted
// to it, and what neither reads named.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { entryPhones, ipaToArpabet, parseArpabet } from '../../src/lib/phonemes.ts';

test('phonemes: ARPAbet as the CMU dictionary writes it, any case; a vowel without a digit is unstressed', () => {
  assert.deepEqual(parseArpabet('t ah0 m ey1 t ow2'), { phones: ['T', 'AH0', 'M', 'EY1', 'T', 'OW2'] });
  assert.deepEqual(parseArpabet('  K AE T '), { phones: ['K', 'AE1', 'T'] }, 'no stress given: the first vowel gets it');
  assert.deepEqual(parseArpabet('K AE Q'), { unknown: 'Q' });
  assert.deepEqual(parseArpabet('K1 AE'), { unknown: 'K1' }, 'consonants take no stress');
  assert.deepEqual(parseArpabet(''), { unknown: '' });
});

test('phonemes: IPA to ARPAbet, stress marks on the next vowel, affricates and diphthongs as one phone', () => {
  assert.deepEqual(ipaToArpabet('təˈmeɪtoʊ'), { phones: ['T', 'AH0', 'M', 'EY1', 'T', 'OW0'] });
  assert.deepEqual(ipaToArpabet('æktʃuəli'), { phones: ['AE1', 'K', 'CH', 'UW0', 'AH0', 'L', 'IY0'] }, "Retell's own example");
  assert.deepEqual(ipaToArpabet('/ˌɛləˈfʌnt/'), { phones: ['EH2', 'L', 'AH0', 'F', 'AH1', 'N', 'T'] });
  assert.deepEqual(ipaToArpabet('ˈdʒɑːb'), { phones: ['JH', 'AA1', 'B'] }, 'length marks dropped');
  assert.deepEqual(ipaToArpabet('bɝd'), { phones: ['B', 'ER1', 'D'] });
  assert.deepEqual(ipaToArpabet('ʁu'), { unknown: 'ʁ' });
});

test('phonemes: an entry is read in its alphabet; other languages are not read', () => {
  assert.deepEqual(entryPhones('cmu', 'HH AY1'), { phones: ['HH', 'AY1'] });
  assert.deepEqual(entryPhones('ipa', 'haɪ'), { phones: ['HH', 'AY1'] });
  assert.equal(entryPhones('pinyin', 'ni3 hao3'), undefined);
});
