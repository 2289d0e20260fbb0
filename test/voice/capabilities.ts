// What the machine can run; tests that need an engine skip with a clear reason when it is missing.
import { existsSync } from 'node:fs';
import { findExecutable, DEBIAN_MODEL_DIR } from '../../src/providers/pocketsphinx/pocketsphinx.stt.ts';

export const NO_POCKETSPHINX = 'no pocketsphinx: apt-get install pocketsphinx pocketsphinx-en-us';

/** True when pocketsphinx_continuous and the Debian en-us model are installed. */
export function hasPocketsphinx(): boolean {
  return Boolean(findExecutable('pocketsphinx_continuous')) && existsSync(`${DEBIAN_MODEL_DIR}/en-us.lm.bin`);
}
