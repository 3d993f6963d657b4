// Checks that run on a regex candidate before it counts as a detection. A
// regex alone cannot express a checksum, so the patterns over-match a little
// and these functions decide. Each returns the accepted length of the
// candidate (0 = not a detection), so a validator may also trim a candidate
// that the greedy pattern extended past its real end.
import { isIPv6 } from 'node:net';

export type Validator = (candidate: string) => number;

/** Luhn over the digits of a card candidate, so random 16-digit runs stay untouched. */
export const luhn: Validator = (candidate) => {
  let sum = 0;
  let double = false;
  let digits = 0;
  for (let i = candidate.length - 1; i >= 0; i--) {
    const c = candidate.charCodeAt(i) - 48;
    if (c < 0 || c > 9) continue;
    digits++;
    let d = c;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return digits >= 13 && digits <= 19 && sum % 10 === 0 ? candidate.length : 0;
};

/**
 * ISO 13616 mod-97 over the IBAN with its first four characters moved to the end.
 * The pattern may swallow one trailing space-separated word in capitals
 * ("... 32 AND"), so shorter space-delimited prefixes are tried as well. One
 * not all in capitals must also have the length the registry gives its
 * country: lower-case prose ("mp34 file from this") would otherwise pass the
 * checksum about once in a hundred candidates.
 */
export const iban: Validator = (candidate) => {
  let end = candidate.length;
  while (end >= 15) {
    const text = candidate.slice(0, end);
    if (ibanValid(text, text !== text.toUpperCase())) return end;
    const space = candidate.lastIndexOf(' ', end - 1);
    if (space < 0) return 0;
    end = space;
  }
  return 0;
};

/** IBAN lengths by country, from the SWIFT IBAN registry. */
const IBAN_LENGTHS: ReadonlyMap<string, number> = new Map(Object.entries({
  AD: 24, AE: 23, AL: 28, AT: 20, AZ: 28, BA: 20, BE: 16, BG: 22, BH: 22, BI: 27, BR: 29, BY: 28, CH: 21, CR: 22, CY: 28,
  CZ: 24, DE: 22, DJ: 27, DK: 18, DO: 28, EE: 20, EG: 29, ES: 24, FI: 18, FK: 18, FO: 18, FR: 27, GB: 22, GE: 22, GI: 23,
  GL: 18, GR: 27, GT: 28, HR: 21, HU: 28, IE: 22, IL: 23, IQ: 23, IS: 26, IT: 27, JO: 30, KW: 30, KZ: 20, LB: 28, LC: 32,
  LI: 21, LT: 20, LU: 20, LV: 21, LY: 25, MC: 27, MD: 24, ME: 22, MK: 19, MN: 20, MR: 27, MT: 31, MU: 30, NI: 28, NL: 18,
  NO: 15, OM: 23, PK: 24, PL: 28, PS: 29, PT: 25, QA: 29, RO: 24, RS: 22, RU: 33, SA: 24, SC: 31, SD: 18, SE: 24, SI: 19,
  SK: 24, SM: 27, SO: 23, ST: 25, SV: 28, TL: 23, TN: 24, TR: 26, UA: 29, VA: 22, VG: 24, XK: 20, YE: 30,
}));

function ibanValid(text: string, strict: boolean): boolean {
  const compact = text.replaceAll(' ', '').toUpperCase();
  if (compact.length < 15 || compact.length > 34) return false;
  if (strict && IBAN_LENGTHS.get(compact.slice(0, 2)) !== compact.length) return false;
  const rearranged = compact.slice(4) + compact.slice(0, 4);
  let rem = 0;
  for (let i = 0; i < rearranged.length; i++) {
    const c = rearranged.charCodeAt(i);
    // Digits count as themselves, letters A..Z as 10..35 (two decimal digits).
    if (c >= 48 && c <= 57) rem = (rem * 10 + (c - 48)) % 97;
    else rem = (rem * 100 + (c - 55)) % 97;
  }
  return rem === 1;
}

/** US SSN, its nine digits with or without separators: the SSA never issues area 000, 666 or 9xx, group 00 or serial 0000. */
export const ssn: Validator = (candidate) => {
  const digits = candidate.replace(/\D/g, '');
  const area = digits.slice(0, 3);
  const group = digits.slice(3, 5);
  const serial = digits.slice(5, 9);
  if (area === '000' || area === '666' || area[0] === '9') return 0;
  if (group === '00' || serial === '0000') return 0;
  return candidate.length;
};

/** E.164 allows at most 15 digits; fewer than 8 is a short code or a stray number, not a phone. */
export const phone: Validator = (candidate) => {
  let digits = 0;
  for (let i = 0; i < candidate.length; i++) {
    const c = candidate.charCodeAt(i);
    if (c >= 48 && c <= 57) digits++;
  }
  return digits >= 8 && digits <= 15 ? candidate.length : 0;
};

/**
 * The IPv6 pattern only finds hex-and-colon runs with two colons near the start;
 * node's parser decides. A digit is required so that `Foo::Bar`-like names and
 * bare `::` are not taken for addresses.
 */
export const ipv6: Validator = (candidate) =>
  isIPv6(candidate) && /\d/.test(candidate) ? candidate.length : 0;
