import type { PhoneNumber } from '../../domain/phone-number.ts';

/** A phone number an account holds (issue 24); the number is unique across accounts, so an inbound call finds its account. */
export type PhoneNumberTable = PhoneNumber;

export interface PhoneNumberTables {
  phone_numbers: PhoneNumberTable;
}
