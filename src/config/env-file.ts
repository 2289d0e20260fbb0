/**
 * The `.env` file: settings kept beside the service instead of in the shell. Precedence, highest
 * first: the process's environment, then the file. The file is `.env` in the working directory,
 * or the one `ENV_FILE` names (relative to the working directory); `ENV_FILE=` (empty) reads none.
 * A missing default `.env` is no error; a missing named file or one that cannot be read is.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseEnv } from 'node:util';
import type { Env } from './env-reader.ts';

/** Largest `.env` read, bytes: settings, not data. */
export const ENV_FILE_MAX_BYTES = 256 * 1024;

/** A `.env` file named but missing, unreadable or too large: what start-up reports, then exits. */
export class EnvFileError extends Error {}

/**
 * The environment the configuration is read from: `env` over the variables of the `.env` file.
 * Only the file's variables that `env` does not set are added; `env` itself is not changed.
 */
export function environment(env: Env = process.env, cwd = process.cwd()): Env {
  const named = env['ENV_FILE'];
  if (named === '') return env;
  const file = path.resolve(cwd, named ?? '.env');
  let text: string;
  try {
    const size = fs.statSync(file).size;
    if (size > ENV_FILE_MAX_BYTES) throw new EnvFileError(`ENV_FILE ${file} is ${size} bytes; at most ${ENV_FILE_MAX_BYTES} are read`);
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    if (error instanceof EnvFileError) throw error;
    if (named === undefined && (error as NodeJS.ErrnoException).code === 'ENOENT') return env;
    throw new EnvFileError(`ENV_FILE ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  return { ...parseEnv(text), ...definedOnly(env) };
}

function definedOnly(env: Env): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));
}
