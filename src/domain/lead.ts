/** Lead (contact) vocabulary. */

/** A lead's free-form fields: names to strings, numbers or booleans. */
export type LeadCustomFields = Record<string, string | number | boolean>;
