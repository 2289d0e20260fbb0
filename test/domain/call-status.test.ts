import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  CALL_STATUSES,
  DISCONNECTION_REASONS,
  canTransition,
  isFinal,
  statusForReason,
  statusesThatCanBecome,
} from '../../src/domain/call-status.ts';

describe('the call status machine', () => {
  it('moves a registered call to ongoing, ended or error, an ongoing one to ended or error, and a final one nowhere', () => {
    const moves = CALL_STATUSES.flatMap((from) => CALL_STATUSES.filter((to) => canTransition(from, to)).map((to) => `${from}->${to}`));
    assert.deepEqual(moves, ['registered->ongoing', 'registered->ended', 'registered->error', 'ongoing->ended', 'ongoing->error']);
  });

  it('derives the guard of each move from the same rule', () => {
    assert.deepEqual(statusesThatCanBecome('ongoing'), ['registered']);
    assert.deepEqual(statusesThatCanBecome('ended'), ['registered', 'ongoing']);
    assert.deepEqual(statusesThatCanBecome('error'), ['registered', 'ongoing']);
    assert.deepEqual(statusesThatCanBecome('registered'), [], 'nothing moves back to registered');
    for (const to of CALL_STATUSES) {
      for (const from of CALL_STATUSES) assert.equal(statusesThatCanBecome(to).includes(from), canTransition(from, to), `${from}->${to}`);
    }
  });

  it('calls exactly the statuses with no way out final', () => {
    assert.deepEqual(CALL_STATUSES.filter(isFinal), ['ended', 'error']);
  });

  it('lets a call not yet final end for every disconnection reason', () => {
    for (const reason of DISCONNECTION_REASONS) {
      const to = statusForReason(reason);
      assert.ok(isFinal(to), reason);
      assert.deepEqual(statusesThatCanBecome(to), CALL_STATUSES.filter((status) => !isFinal(status)), reason);
    }
  });
});
