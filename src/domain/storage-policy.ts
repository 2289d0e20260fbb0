/**
 * Storage policies, least to most restrictive. A call's policy may only move to the right
 * (spec: "cannot be changed to a less restrictive one than the current policy").
 */
export const STORAGE_POLICIES = ['everything', 'everything_except_pii', 'basic_attributes_only'] as const;

export type StoragePolicy = (typeof STORAGE_POLICIES)[number];

export function restrictiveness(policy: StoragePolicy): number {
  return STORAGE_POLICIES.indexOf(policy);
}

/** True when moving from `current` to `next` loosens the policy (which is refused). */
export function isLessRestrictive(next: StoragePolicy, current: StoragePolicy): boolean {
  return restrictiveness(next) < restrictiveness(current);
}
