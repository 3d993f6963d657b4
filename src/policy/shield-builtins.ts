// The built-in prompt shield: phrasings that recur in prompt-injection and
// jailbreak attempts. They aim at instructions aimed at the model ("ignore
// previous instructions", "you are now DAN"), not at topics, so that a prompt
// that merely discusses jailbreaks in general passes. All are RE2 syntax,
// case-insensitive, and run through the same RuleSet as organisation rules.

const I = '(?i)';
const PRIOR = '(?:all\\s+|any\\s+|the\\s+|your\\s+|of\\s+)*(?:previous|prior|above|preceding|earlier|original|system|initial)';
const RULES_WORD = '(?:instructions?|prompts?|rules|directives|guidelines|context|messages?)';

export const BUILTIN_SHIELD: readonly { name: string; source: string }[] = [
  { name: 'ignore_previous', source: `${I}\\b(?:ignore|disregard|forget|override|bypass|skip)\\s+${PRIOR}\\s+${RULES_WORD}` },
  { name: 'new_instructions', source: `${I}\\b(?:new|updated|real)\\s+(?:system\\s+)?instructions\\s*:\\s` },
  { name: 'reveal_system_prompt', source: `${I}\\b(?:reveal|print|show|repeat|output|leak|display)\\s+(?:me\\s+)?(?:your|the)\\s+(?:full\\s+|hidden\\s+|secret\\s+|initial\\s+)?(?:system\\s+prompt|instructions|initial\\s+prompt)` },
  { name: 'dan_persona', source: `${I}\\b(?:you\\s+are\\s+(?:now\\s+)?DAN\\b|do\\s+anything\\s+now)` },
  { name: 'developer_mode', source: `${I}\\b(?:enable|activate|enter)\\s+(?:developer|god|jailbreak|unrestricted)\\s+mode\\b` },
  { name: 'no_restrictions', source: `${I}\\b(?:pretend|act|behave|imagine)\\s+(?:that\\s+|as\\s+if\\s+|like\\s+)?you\\s+(?:are|have|were)\\s+(?:an?\\s+)?(?:no|without|free\\s+(?:of|from)|unrestricted|unfiltered|uncensored)\\b` },
  { name: 'fake_system_turn', source: `${I}(?:^|\\n)\\s*(?:\\[system\\]|<\\|im_start\\|>\\s*system|###\\s*system\\s*:|<system>)` },
];
