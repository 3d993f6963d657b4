// Text as a reader sees it. A zero-width space, a soft hyphen or a word
// joiner inside a word shows nothing; a no-break space shows a space;
// full-width letters, mathematical letters and ligatures read as the letters
// they are drawn as; a non-breaking hyphen or a minus sign as a hyphen. A
// model reads them so, and so does a person, but RE2's \s, \b and a term's
// letters do not: "ignore\u00a0previous instructions", "bob＠example.com" and
// "make a b\u200bomb" passed every rule (until 2026-11-29). Policy reads text
// both as written and folded so. Homoglyphs (a Cyrillic а for a Latin a) are
// not folded: which are confusable depends on the script the reader expects.
import type { TextView } from './text-view.js';

/** Anything foldFirst would change; most text has none, and is read only as written. */
const FOLDABLE = /[\u00a0\u00ad\u034f\u061c\u115f\u1160\u1680\u17b4\u17b5\u180b-\u180f\u2000-\u2015\u2028-\u202f\u205f-\u206f\u2070-\u209f\u2100-\u214f\u2212\u2460-\u24ff\u3000\u3164\ufb00-\ufb06\ufe00-\ufe0f\ufe58\ufe63\ufeff\uff01-\uff5e\uffa0\ufff0-\ufff8]|\ud835[\udc00-\udfff]|\udb40[\udc00-\udfff]/;

const isIgnorable = (cp: number): boolean =>
  cp === 0xad || cp === 0x34f || cp === 0x61c || cp === 0x115f || cp === 0x1160 || cp === 0x17b4 || cp === 0x17b5 || (cp >= 0x180b && cp <= 0x180f)
  || (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x206f) || cp === 0x3164
  || (cp >= 0xfe00 && cp <= 0xfe0f) || cp === 0xfeff || cp === 0xffa0 || (cp >= 0xfff0 && cp <= 0xfff8) || (cp >= 0xe0000 && cp <= 0xe0fff);

const isSpace = (cp: number): boolean => cp === 0xa0 || cp === 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp === 0x2028 || cp === 0x2029 || cp === 0x202f || cp === 0x205f || cp === 0x3000;

const isDash = (cp: number): boolean => (cp >= 0x2010 && cp <= 0x2015) || cp === 0x2212 || cp === 0xfe58 || cp === 0xfe63 || cp === 0xff0d;

/** Drawn as other letters: compatibility forms NFKC maps to them. */
const isCompat = (cp: number): boolean => (cp >= 0xff01 && cp <= 0xff5e) || (cp >= 0xfb00 && cp <= 0xfb06) || (cp >= 0x2460 && cp <= 0x24ff)
  || (cp >= 0x2070 && cp <= 0x209f) || (cp >= 0x2100 && cp <= 0x214f) || (cp >= 0x1d400 && cp <= 0x1d7ff);

/** The folded view of `text`, or undefined when nothing in it folds. `at` maps each of its characters to where it began. */
export function foldedView(text: string, positions = true): TextView | undefined {
  if (!FOLDABLE.test(text)) return undefined;
  let out = '';
  const at: number[] = [];
  for (let i = 0; i < text.length;) {
    const cp = text.codePointAt(i)!;
    const width = cp > 0xffff ? 2 : 1;
    let s: string;
    if (isIgnorable(cp)) s = '';
    else if (isSpace(cp)) s = ' ';
    else if (isDash(cp)) s = '-';
    else if (isCompat(cp)) s = String.fromCodePoint(cp).normalize('NFKC');
    else s = text.slice(i, i + width);
    if (positions) for (let k = 0; k < s.length; k++) at.push(i);
    out += s;
    i += width;
  }
  if (positions) at.push(text.length);
  return { text: out, at };
}
