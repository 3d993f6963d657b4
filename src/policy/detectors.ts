// The built-in DLP detectors. Each is one V8 regex pass (plus a check in JS
// where a regex cannot express the rule), compiled once per process.
//
// V8, one pass per detector: measured in bench/policy-detectors.ts. The same
// detections as one combined alternation ran at ~50 MB/s on V8 (the
// alternation hides each pattern's leading literal from irregexp's fast
// scan) and ~3 MB/s on RE2 (capture groups force its slow engines); separate
// passes that each open with a literal or a narrow class ('@', ':', 'sk',
// 'eyJ', [2-6]) sum to ~140 MB/s. RE2 also pays a UTF-16 to UTF-8 copy per
// call and has no lookaround. V8's backtracking is safe here because the
// patterns are ours and written to be linear:
//   - every quantifier over a class is bounded ({1,64}, {16,256});
//   - no quantified group holds an ambiguous quantifier, so a failed attempt
//     backtracks a bounded number of steps;
//   - a pattern that scans a long run may start only at the start of a run:
//     a lookbehind placed just after the leading literal (so the fast scan
//     still sees the literal) refuses a start inside a run. Without it,
//     'aeyJ' x 25k took a second (every 'eyJ' scanned 8 KB ahead); the test
//     in test/policy-detectors.test.ts keeps such inputs in milliseconds.
//     IPv4 and phone matches are short, so they check the one character
//     before the match in JS instead;
//   - the private-key body is a lazy scan that always succeeds (END or end of
//     text), so it never fails and restarts.
// So each start position costs O(1) and a text O(n).
//
// A detector whose every match holds a rare character at a fixed offset (a
// `lead`: '@', the 'J' of 'eyJ', the IPv6 colon) finds its candidates with
// indexOf, a memchr-style search several times faster than irregexp's scan
// for a leading literal, and tries its pattern, sticky, only there. One
// character, not the whole literal: V8 searches a short needle by its first
// character, and 'e' or '-' stop it all through prose. On text without those
// characters the pass is nearly free; measured in bench/policy-detectors.ts.
// The private key's header has no such character since it may be in lower
// case with four dashes or five (it led with the 'G' of '-----BEGIN' until
// 2026-11-29): it leads with '----', which a hyphen in prose stops at, for
// about 50 µs a megabyte of prose rather than 20.
import * as validate from './validators.js';
import type { Validator } from './validators.js';
import type { Substitution } from './compile.js';

export const DETECTORS = [
  'private_key', 'jwt', 'github_token', 'secret_key', 'aws_access_key', 'bearer_token',
  'email', 'iban', 'card', 'ssn', 'ip', 'phone',
] as const;
export type DetectorName = (typeof DETECTORS)[number];

/** Reports each detection as a [start, end) span of the text. */
export type Scanner = (text: string, emit: (start: number, end: number) => void) => void;

interface RegexScanner {
  source: string;
  /** 'i' for a pattern read in any case; the scanner adds its own 'g' or 'y'. */
  flags?: string;
  /** A literal every match holds `at` characters after its start: candidates are found with indexOf. */
  lead?: { text: string; at: number };
  /** A character that may not precede the match: the match would sit inside a longer run. */
  notAfter?: RegExp;
  /** Accepted length, 0 to reject; a rejected candidate is skipped whole. */
  check?: Validator;
  /** When the pattern has a group, only the group is the secret (the token after "Bearer "). */
  group?: boolean;
}

/** The first match starting at or after `from`, or null: the same answer from a global regex or from a lead and a sticky one. */
export type NextMatch = (text: string, from: number) => RegExpExecArray | null;

export function matcher(spec: Pick<RegexScanner, 'source' | 'lead' | 'flags'>): NextMatch {
  const lead = spec.lead;
  const flags = spec.flags ?? '';
  if (lead === undefined) {
    const re = new RegExp(spec.source, `g${flags}`);
    return (text, from) => {
      re.lastIndex = from;
      return re.exec(text);
    };
  }
  const re = new RegExp(spec.source, `y${flags}`);
  return (text, from) => {
    for (let i = text.indexOf(lead.text, from + lead.at); i >= 0; i = text.indexOf(lead.text, i + 1)) {
      re.lastIndex = i - lead.at;
      const m = re.exec(text);
      if (m !== null) return m;
    }
    return null;
  };
}

function regexScanner(spec: RegexScanner): Scanner {
  const next = matcher(spec);
  return (text, emit) => {
    for (let m = next(text, 0); m !== null;) {
      if (spec.notAfter !== undefined && m.index > 0 && spec.notAfter.test(text[m.index - 1]!)) {
        m = next(text, m.index + 1);
        continue;
      }
      const value = spec.group === true ? m[1]! : m[0];
      const start = m.index + m[0].length - value.length;
      const length = spec.check === undefined ? value.length : spec.check(value);
      if (length > 0) emit(start, start + length);
      m = next(text, m.index + m[0].length);
    }
  };
}

/** [A-Za-z0-9._%+-] by char code: this runs per character of every local part. */
function isLocal(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 64 && c <= 90 && c !== 64) || (c >= 48 && c <= 57) || c === 46 || c === 95 || c === 37 || c === 43 || c === 45;
}
/** A top-level domain: letters, or an internationalised one in its ASCII form (xn--p1ai). */
const EMAIL_DOMAIN = matcher({ source: '@[A-Za-z0-9-]{1,63}(?:\\.[A-Za-z0-9-]{1,63}){0,8}\\.(?:[A-Za-z]{2,24}|[Xx][Nn]--[A-Za-z0-9-]{1,59})(?![A-Za-z0-9-])', lead: { text: '@', at: 0 } });

/**
 * Finds each '@' with its domain, then walks the local part leftwards. RFC
 * 5321 allows 64 characters, but a longer local part still reads as an
 * address, and a server may take it (until 2026-11-29 one of 65 passed). A
 * walk stops at the end of the last match; any other character that stops
 * it is not a local one ('@' among them), so walks never overlap and a text
 * costs O(n).
 */
const email: Scanner = (text, emit) => {
  let floor = 0;
  for (let m = EMAIL_DOMAIN(text, 0); m !== null;) {
    let start = m.index;
    while (start > floor && isLocal(text.charCodeAt(start - 1))) start--;
    if (start < m.index) {
      floor = m.index + m[0].length;
      emit(start, floor);
      m = EMAIL_DOMAIN(text, floor);
    } else {
      m = EMAIL_DOMAIN(text, m.index + 1);
    }
  }
};

const HEXCOLON = /[0-9A-Fa-f:]/;
/** A colon followed by a hex digit or a colon: found with indexOf, then one character read. */
const COLON = matcher({ source: ':(?=[0-9A-Fa-f:])', lead: { text: ':', at: 0 } });
const V6 = /[0-9A-Fa-f:]{2,39}(?:(?<=:)\d{1,3}(?:\.\d{1,3}){3})?(?![\w:]|\.\d)/y;

/** Finds a colon by the fast scan, backs up to the start of its hex-and-colon run, and lets node parse the run. */
const ipv6: Scanner = (text, emit) => {
  for (let m = COLON(text, 0); m !== null;) {
    let start = m.index;
    while (start > 0 && m.index - start < 39 && HEXCOLON.test(text[start - 1]!)) start--;
    V6.lastIndex = start;
    const run = (start === 0 || !/[\w:.]/.test(text[start - 1]!)) ? V6.exec(text) : null;
    const end = run === null ? 0 : start + validate.ipv6(run[0]);
    if (end > start) emit(start, end);
    // Any later colon in the same run has a hex digit or colon before it, so skip the run.
    let next = m.index + 1;
    while (next < text.length && HEXCOLON.test(text[next]!)) next++;
    m = COLON(text, Math.max(next, end));
  }
};

const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const ipv4 = regexScanner({
  // A fifth group (10.0.0.1.5) or a leading "v"/dot marks a version string, not an address.
  source: `${OCTET}(?:\\.${OCTET}){3}(?!\\w|\\.\\d)`,
  notAfter: /[\w.]/,
});

/**
 * An SSN as the SSA writes it, 3-2-4 with dashes, or with single spaces; and
 * nine digits with or without separators after "SSN" or "social security"
 * (only the number is the secret). Nine bare digits alone are not: order
 * numbers, ids and amounts are nine digits far more often than SSNs are.
 */
const ssnSeparated = regexScanner({
  source: '\\d(?<![\\d-]\\d)(?<!\\d \\d)\\d{2}(?:-\\d{2}-\\d{4}(?![\\d-])| \\d{2} \\d{4}(?!\\d| \\d))',
  check: validate.ssn,
});
const ssnNamed = regexScanner({
  source: '\\b(?:ssn|social security)(?:[^\\d\\n]{0,24}?)(\\d{3}[ -]?\\d{2}[ -]?\\d{4})(?![\\d-])',
  flags: 'i',
  group: true,
  check: validate.ssn,
});

/**
 * How a detector reads the input's view with line breaks inside tokens
 * joined (text-reader.ts; spans.ts places what it finds there):
 * - 'fills': a match there counts where nothing matched as written; an
 *   address's greedy ends would take a word from the line before or after.
 * - 'runs-on': the same, and one that runs a match as written on over a
 *   break replaces it with the whole lines it adds that hold a digit: a key
 *   wrapped at a column, whose head already matches alone.
 * The rest (cards, phones, SSNs, IPs) do not read it: a line ending in digits
 * and the next beginning with them are two numbers far more often than one,
 * and a card's break already reads as the space its pattern allows.
 */
export type AcrossLines = 'fills' | 'runs-on';

interface Detector { readonly label: string; readonly scan: Scanner; readonly lines?: AcrossLines }

const TABLE: Record<DetectorName, Detector> = {
  // A PEM key, an OpenSSH one or a PGP secret key block; in any case, with four or five dashes (a
  // reader and many parsers take either). Four dashes lead: BEGIN no longer sits at a fixed offset.
  private_key: {
    label: 'PRIVATE_KEY',
    scan: regexScanner({
      source: '-{4,5}BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-{4,5}[\\s\\S]*?(?:-{4,5}END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-{4,5}|$)',
      flags: 'i',
      lead: { text: '----', at: 0 },
    }),
  },
  jwt: { label: 'JWT', lines: 'runs-on', scan: regexScanner({ source: 'eyJ(?<![\\w-]eyJ)[A-Za-z0-9_-]{4,8192}\\.eyJ[A-Za-z0-9_-]{4,16384}\\.[A-Za-z0-9_-]{0,8192}', lead: { text: 'J', at: 2 } }) },
  github_token: { label: 'GITHUB_TOKEN', lines: 'runs-on', scan: regexScanner({ source: 'g(?<!\\wg)(?:h[pousr]_[A-Za-z0-9]{36,255}|ithub_pat_[A-Za-z0-9_]{22,255})' }) },
  // After a name's '_' or '-' too (OPENAI_KEY_sk-…), but not inside a word (task-…, desk-…).
  secret_key: { label: 'SECRET_KEY', lines: 'runs-on', scan: regexScanner({ source: 'sk(?<![A-Za-z0-9]sk)(?:-|_live_|_test_)[A-Za-z0-9_-]{20,256}' }) },
  // After a digit too (1AKIA…); after a capital, it is the tail of a longer run of capitals.
  aws_access_key: { label: 'AWS_ACCESS_KEY', lines: 'runs-on', scan: regexScanner({ source: 'A(?<![A-Z]A)(?:KIA|SIA|GPA|IDA|ROA|NPA|NVA|IPA)[A-Z0-9]{16}(?![A-Z0-9])' }) },
  // Only the token is replaced; "Bearer " stays so the text still reads right. The word in any case (BEARER).
  bearer_token: { label: 'BEARER_TOKEN', lines: 'runs-on', scan: regexScanner({ source: 'bearer(?<!\\wbearer)[ \\t]{1,4}([A-Za-z0-9._~+/=-]{16,4096})', flags: 'i', group: true }) },
  email: { label: 'EMAIL', lines: 'fills', scan: email },
  // In any case; one not all in capitals must also have its country's length (validators.ts).
  iban: { label: 'IBAN', lines: 'runs-on', scan: regexScanner({ source: '[A-Z](?<![A-Za-z0-9][A-Z])[A-Z]\\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?(?![A-Za-z0-9])', flags: 'i', check: validate.iban }) },
  // Digits, in groups or not, with spaces or dashes; or four groups of four with dots or slashes.
  // After a label's '-' or '.' (CARD-4111…), but not a number's (12-4111…, 1.4111…); before a
  // word's '-' (4111…-exp), but not a longer number's.
  card: {
    label: 'CARD',
    scan: regexScanner({
      source: '[2-6](?<!\\d[2-6])(?<!\\d[.-][2-6])(?:(?:[ -]?\\d){12,18}(?!\\d|-\\d)|\\d{3}(?:\\.\\d{4}){3}(?!\\d|\\.\\d)|\\d{3}(?:\\/\\d{4}){3}(?!\\d|\\/\\d))',
      check: validate.luhn,
    }),
  },
  ssn: { label: 'SSN', scan: (text, emit) => { ssnSeparated(text, emit); ssnNamed(text, emit); } },
  ip: { label: 'IP', scan: (text, emit) => { ipv4(text, emit); ipv6(text, emit); } },
  phone: {
    label: 'PHONE',
    scan: regexScanner({
      source: '(?:\\+\\d{8,15}|\\+\\d{1,3}(?:[ .-]?\\(\\d{1,4}\\))?(?:[ .-]\\d{1,10}){1,6}|\\(\\d{3}\\)[ .-]?\\d{3}[ .-]\\d{4}|\\d{3}[.-]\\d{3}[.-]\\d{4})(?!\\w)',
      notAfter: /[\w+]/,
      check: validate.phone,
    }),
  },
};

export interface CompiledDetector { readonly sub: Substitution; readonly scan: Scanner; readonly lines: AcrossLines | undefined }

/** The selected detectors in table order; shared by every organisation (the scanners hold no per-org state). */
export function compileDetectors(selected: readonly DetectorName[]): CompiledDetector[] {
  return DETECTORS.filter((d) => selected.includes(d)).map((type) => ({
    sub: { type, label: TABLE[type].label, replacement: undefined },
    scan: TABLE[type].scan,
    lines: TABLE[type].lines,
  }));
}
