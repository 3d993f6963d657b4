// The built-in prompt shield: phrasings that recur in prompt-injection and
// jailbreak attempts. They aim at instructions to the model ("ignore previous
// instructions", "you are now DAN"), not at topics, so a prompt that discusses
// jailbreaks passes; and each names what is being overridden ("instructions",
// "restrictions"), so everyday phrases ("ignore the previous message",
// "enable developer mode on my phone", "imagine you have no money") pass too.
// All are RE2 syntax, case-insensitive, run through the same RuleSet as
// organisation rules.

const I = '(?i)';
const PRIOR = '(?:(?:all|any|the|your|of|my|these|those)\\s+)*(?:previous|prior|above|preceding|earlier|original|system|initial)';
const RULES = '(?:instructions?|prompts?|rules|directives|guidelines)';
// A line break is any a reader breaks a line at (Unicode's mandatory breaks:
// LF, VT, FF, CR, NEL, U+2028, U+2029), not only \n: a fake turn after any
// other passed (until 2026-11-29). The folded reading (text-reader.ts) reads
// every break as a space, so a rule anchored at a line's start reads the text
// as written only: what may stand between the break and the turn's marker is
// spelled out, any space a reader reads as one and invisible format
// characters (a zero-width space, a BOM), not RE2's \s alone.
const BREAK = '[\\n\\v\\f\\r\\x{85}\\x{2028}\\x{2029}]';
const BLANK = '[\\s\\v\\x{85}\\p{Z}\\p{Cf}]*';
const LIMITS = '(?:restrictions|rules|filters|limits|limitations|guidelines|censorship|ethics|content\\s+polic(?:y|ies))';

export const BUILTIN_SHIELD: readonly { name: string; source: string }[] = [
  { name: 'ignore_previous', source: `${I}\\b(?:ignore|disregard|forget|override|bypass)\\s+${PRIOR}\\s+${RULES}\\b` },
  { name: 'new_system_prompt', source: `${I}\\b(?:new|updated|real)\\s+system\\s+(?:instructions|prompt)\\s*:` },
  { name: 'reveal_system_prompt', source: `${I}\\b(?:reveal|print|show|repeat|output|leak|display)\\s+(?:me\\s+)?(?:your|the)\\s+(?:full\\s+|exact\\s+)?(?:system\\s+prompt|initial\\s+prompt|(?:hidden|secret|system|original)\\s+instructions)` },
  { name: 'dan_persona', source: `${I}\\b(?:you\\s+are\\s+(?:now\\s+)?DAN\\b|do\\s+anything\\s+now\\b)` },
  { name: 'jailbreak_mode', source: `${I}\\b(?:(?:jailbreak|god|unrestricted|DAN)\\s+mode\\b|developer\\s+mode\\s+(?:enabled|output|response))` },
  { name: 'no_restrictions', source: `${I}\\b(?:pretend|act|behave|imagine)\\s+(?:that\\s+|as\\s+if\\s+|like\\s+)?you\\s+(?:are|have|were)\\s+(?:an?\\s+)?(?:(?:no|without)\\s+(?:any\\s+)?${LIMITS}|free\\s+(?:of|from)\\s+(?:all\\s+)?${LIMITS}|unrestricted|unfiltered|uncensored|jailbroken)\\b` },
  { name: 'fake_system_turn', source: `${I}(?:^|${BREAK})${BLANK}(?:\\[system\\]|<\\|im_start\\|>${BLANK}system|###${BLANK}system${BLANK}:|<system>)` },
];
