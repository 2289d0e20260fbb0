/** Support-ticket vocabulary. */

/** How urgent a ticket is, least to most; `normal` when not given. */
export const TICKET_PRIORITIES = ['low', 'normal', 'high', 'urgent'] as const;
export type TicketPriority = (typeof TICKET_PRIORITIES)[number];

/** A ticket's state; every ticket is created `open` and this version has no way to change it. */
export const TICKET_STATUSES = ['open'] as const;
export type TicketStatus = (typeof TICKET_STATUSES)[number];
