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
 * ("... 32 AND"), so shorter space-delimited prefixes are tried as well.
 */
export const iban: Validator = (candidate) => {
  let end = candidate.length;
  while (end >= 15) {
    if (ibanValid(candidate.slice(0, end))) return end;
    const space = candidate.lastIndexOf(' ', end - 1);
    if (space < 0) return 0;
    end = space;
  }
  return 0;
};

function ibanValid(text: string): boolean {
  const compact = text.replaceAll(' ', '');
  if (compact.length < 15 || compact.length > 34) return false;
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

/** US SSN: the SSA never issues area 000, 666 or 9xx, group 00 or serial 0000. */
export const ssn: Validator = (candidate) => {
  const area = candidate.slice(0, 3);
  const group = candidate.slice(4, 6);
  const serial = candidate.slice(7, 11);
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
