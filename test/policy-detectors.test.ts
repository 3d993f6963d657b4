// Each built-in DLP detector against positives and near misses, run through
// the same scan the engine uses inline.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { compilePolicy } from '../src/policy/compile.js';
import { orgPolicySchema } from '../src/policy/config-schema.js';
import { matcher, type DetectorName, type NextMatch } from '../src/policy/detectors.js';
import { scanTexts } from '../src/policy/scan-input.js';
import type { InputScan } from '../src/policy/types.js';

function scanWith(detectors: DetectorName[] | 'all', text: string): InputScan {
  const policy = compilePolicy(orgPolicySchema.parse({ dlp: { detectors }, shield: { builtin: false } }));
  const outcome = scanTexts(policy, [text]);
  assert.equal(outcome.blocked, false);
  if (outcome.blocked) throw new Error('unreachable');
  return outcome.scan;
}

const CASES: Record<DetectorName, { label: string; hits: string[]; misses: string[] }> = {
  email: {
    label: 'EMAIL',
    hits: ['jane.doe@example.com', 'a+tag@sub.example.co.uk', 'X_Y%z@host-1.io', `${'a'.repeat(70)}@example.com`, 'bob@example.xn--p1ai'],
    misses: ['@handle on social', 'user@localhost', 'name@domain.', 'a@b.c'],
  },
  phone: {
    label: 'PHONE',
    hits: ['+1 (415) 555-2671', '+44 20 7946 0958', '+14155552671', '+33 1 23 45 67 89', '+49-30-1234567', '(415) 555-2671', '415-555-2671'],
    misses: ['+1 555', 'call 555-1234', 'ratio 1-2-3', '2024-01-15', '+1234567'],
  },
  card: {
    label: 'CARD',
    hits: ['4111 1111 1111 1111', '5500-0055-5555-5559', '378282246310005', '6011111111111117', '4111.1111.1111.1111', '4111/1111/1111/1111'],
    misses: ['4111 1111 1111 1112', '5500005555555558', '1234567890123456', 'order 411111111111111122', 'pi 3.141592653589793', 'x 1.4111111111111111', '12-4111111111111111', '4111.1111.1111.1111.2'],
  },
  ssn: {
    label: 'SSN',
    hits: ['123-45-6789', '078-05-1120', '123 45 6789'],
    misses: ['000-12-3456', '666-12-3456', '912-34-5678', '123-00-4567', '123-45-0000', '1123-45-6789', 'order 123456789', '1 123 45 6789', '123 45 6789 0', 'SSN 666456789'],
  },
  iban: {
    label: 'IBAN',
    hits: ['DE89 3704 0044 0532 0130 00', 'GB82WEST12345698765432', 'FR14 2004 1010 0505 0001 3M02 606', 'de89 3704 0044 0532 0130 00', 'gb82west12345698765432'],
    misses: ['DE89 3704 0044 0532 0130 09', 'GB82WEST12345698765431', 'AB12 CDEF GHIJ', 'de89 3704 0044 0532 0130 09', 'mp34 file from this and that'],
  },
  ip: {
    label: 'IP',
    hits: ['10.0.0.1', '192.168.1.254', '255.255.255.255', '2001:db8::1', '::1', 'fe80::1ff:fe23:4567:890a', '::ffff:192.0.2.1'],
    misses: ['1.2.3', '10.0.0.1.5', 'v1.2.3.4', '256.1.1.1', '12:30:45', 'std::vector', 'Foo::Bar::baz'],
  },
  aws_access_key: {
    label: 'AWS_ACCESS_KEY',
    hits: ['AKIAIOSFODNN7EXAMPLE', 'ASIAY34FZKBOKMUTVV7A'],
    misses: ['AKIAIOSFODNN7EXAMPL', 'XAKIAIOSFODNN7EXAMPLE', 'AKIAIOSFODNN7EXAMPLEX', 'XYAKIAIOSFODNN7EXAMPLE'],
  },
  secret_key: {
    label: 'SECRET_KEY',
    hits: ['sk-proj-abcdefghijklmnopqrstuvwxyz123456', 'sk-ant-api03-abcdefghijklmnopqrst', 'sk_live_4eC39HqLyjWDarjtT1zdp7dc'],
    misses: ['sk-short', 'task-abcdefghijklmnopqrstuvwxyz', 'desk-abcdefghijklmnopqrstuvwxyz123'],
  },
  github_token: {
    label: 'GITHUB_TOKEN',
    hits: ['ghp_abcdefghijklmnopqrstuvwxyz0123456789', 'github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz'],
    misses: ['ghp_tooshort123', 'ghx_abcdefghijklmnopqrstuvwxyz0123456789'],
  },
  jwt: {
    label: 'JWT',
    hits: ['eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U'],
    misses: ['eyJhbGciOiJIUzI1NiJ9', 'eyJ.eyJ.x'],
  },
  bearer_token: {
    label: 'BEARER_TOKEN',
    hits: ['abcdef0123456789ABCDEF.xyz'],
    misses: [],
  },
  private_key: {
    label: 'PRIVATE_KEY',
    hits: [
      '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----', '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA\n-----END OPENSSH PRIVATE KEY-----',
      '-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF0Z\n-----END PGP PRIVATE KEY BLOCK-----', '-----begin rsa private key-----\nMIIEowIB\n-----end rsa private key-----',
      '----BEGIN EC PRIVATE KEY----\nMHcCAQEE\n----END EC PRIVATE KEY----',
    ],
    misses: ['-----BEGIN PUBLIC KEY-----\nMIIBIjAN\n-----END PUBLIC KEY-----', '-----BEGIN CERTIFICATE-----', '-----BEGIN PGP PUBLIC KEY BLOCK-----\nmQINBF\n-----END PGP PUBLIC KEY BLOCK-----', '--- BEGIN PRIVATE KEY ---'],
  },
};

describe('built-in DLP detectors', () => {
  for (const [name, c] of Object.entries(CASES) as [DetectorName, (typeof CASES)[DetectorName]][]) {
    it(`${name}: redacts positives`, () => {
      for (const hit of c.hits) {
        const text = name === 'bearer_token' ? `Authorization: Bearer ${hit}` : `before ${hit} after.`;
        const scan = scanWith([name], text);
        const expected = name === 'bearer_token' ? `Authorization: Bearer [${c.label}_1]` : `before [${c.label}_1] after.`;
        assert.equal(scan.texts[0], expected, hit);
        assert.deepEqual(scan.byType, { [name]: 1 });
      }
    });
    it(`${name}: leaves near misses alone (with every detector on)`, () => {
      for (const miss of c.misses) {
        const text = `before ${miss} after`;
        const scan = scanWith('all', text);
        assert.equal(scan.texts[0], text, miss);
        assert.equal(scan.redactions, 0, miss);
      }
    });
  }

  it('finds secrets where a label, a separator or a case hid them (until 2026-11-29 each passed)', () => {
    const cases: Array<[DetectorName, string, string]> = [
      ['card', 'CARD-4111111111111111 card.4111111111111111 4111111111111111-exp', 'CARD-[CARD_1] card.[CARD_1] [CARD_1]-exp'],
      ['ssn', 'SSN 123456789, ssn: 123 45 6789, Social Security Number is 078-05-1120', 'SSN [SSN_1], ssn: [SSN_2], Social Security Number is [SSN_3]'],
      ['bearer_token', 'AUTHORIZATION: BEARER abcdef0123456789ABCDEF.xyz', 'AUTHORIZATION: BEARER [BEARER_TOKEN_1]'],
      ['secret_key', 'OPENAI_KEY_sk-proj-abcdefghijklmnopqrstuvwxyz and key-sk-abcdefghijklmnopqrstuvwxyz', 'OPENAI_KEY_[SECRET_KEY_1] and key-[SECRET_KEY_2]'],
      ['aws_access_key', 'id 1AKIAIOSFODNN7EXAMPLE', 'id 1[AWS_ACCESS_KEY_1]'],
    ];
    for (const [name, text, expected] of cases) assert.equal(scanWith([name], text).texts[0], expected, text);
    // Nine bare digits are an SSN only after its name: an order number is not one.
    assert.equal(scanWith(['ssn'], 'order 123456789, ref 123 456 789').redactions, 0);
  });

  it('reads a decimal digit of any script as its value, and redacts it as written (until 2026-11-29 each passed)', () => {
    const inScript = (s: string, zero: number): string => s.replace(/[0-9]/g, (d) => String.fromCodePoint(zero + Number(d)));
    // Arabic-Indic, Persian, Devanagari, Bengali, NKo, Brahmi (beyond the BMP), mathematical monospace (a run of fifty).
    for (const zero of [0x0660, 0x06f0, 0x0966, 0x09e6, 0x07c0, 0x11066, 0x1d7f6]) {
      const card = inScript('4111 1111 1111 1111', zero);
      assert.equal(scanWith(['card'], `charge ${card} please`).texts[0], 'charge [CARD_1] please', card);
      assert.equal(scanWith(['ssn'], `SSN ${inScript('123-45-6789', zero)} on file`).texts[0], 'SSN [SSN_1] on file', card);
      // Luhn reads the digits' values: a number that fails it as ASCII fails it so too.
      const miss = `before ${inScript('4111 1111 1111 1112', zero)} after`;
      assert.equal(scanWith('all', miss).texts[0], miss);
    }
    // Scripts mixed in one number, as a reader reads them all.
    assert.equal(scanWith(['card'], `card 4111 ${inScript('1111', 0x0660)} 1111 ${inScript('1111', 0x0966)}.`).texts[0], 'card [CARD_1].');
  });

  it('keeps "Bearer" and only replaces a bearer token of plausible length', () => {
    assert.equal(scanWith(['bearer_token'], 'Bearer short').redactions, 0);
    assert.equal(scanWith(['bearer_token'], 'the bearer of bad news').redactions, 0);
  });

  it('redacts a private key without its END line to the end of the text', () => {
    const scan = scanWith(['private_key'], 'key: -----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI truncated');
    assert.equal(scan.texts[0], 'key: [PRIVATE_KEY_1]');
  });

  it('only runs the detectors an organisation selected', () => {
    const scan = scanWith(['email'], 'jane@example.com 123-45-6789 10.0.0.1');
    assert.equal(scan.texts[0], '[EMAIL_1] 123-45-6789 10.0.0.1');
  });

  it('stays linear on adversarial runs of 100k characters', () => {
    const inputs = [
      'a'.repeat(100_000), '1'.repeat(100_000), '4'.repeat(100_000), '4 '.repeat(50_000), 'a.'.repeat(50_000),
      '1.'.repeat(50_000), '@a'.repeat(50_000), ':1'.repeat(50_000), '1:'.repeat(50_000), 'sk-'.repeat(33_000),
      'ask-'.repeat(25_000), 'aeyJ'.repeat(25_000), 'eyJa.'.repeat(20_000), 'agh_p'.repeat(20_000), 'AAKIA'.repeat(20_000),
      '-----BEGIN PRIVATE KEY-----'.repeat(4_000), 'xBearer '.repeat(12_000), '+1 '.repeat(33_000), 'DE89'.repeat(25_000),
      '123-45-'.repeat(14_000), `${'a'.repeat(63)}.`.repeat(1_500), '-'.repeat(100_000), '----BEGIN '.repeat(10_000),
      'ssn '.repeat(25_000), 'SSN 1'.repeat(20_000), '123 45 '.repeat(14_000), 'bearer '.repeat(14_000), 'de89 '.repeat(20_000),
      `${'a'.repeat(100_000)}@b.cd`, '4111.'.repeat(20_000), '4111/'.repeat(20_000), 'a@b.xn--'.repeat(12_000),
    ];
    for (const text of inputs) {
      const started = performance.now();
      scanWith('all', text);
      const elapsed = performance.now() - started;
      // A correctness bound with room for a loaded machine: a quadratic pattern takes seconds here.
      assert.ok(elapsed < 250, `${JSON.stringify(text.slice(0, 12))}... took ${elapsed.toFixed(0)} ms`);
    }
  });
});

describe('line breaks inside tokens', () => {
  const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U';

  it('a secret split by a line break is redacted whole, its break with it (until 2026-11-29 each passed)', () => {
    const cases: Array<[string, string]> = [
      ['mail bob@\nexample.com now', 'mail [EMAIL_1] now'],
      ['mail bob\r\n@example.com now', 'mail [EMAIL_1] now'],
      ['mail bob@\rexample.com, bob@\u2028example.com or bob\u2029@example.com', 'mail [EMAIL_1], [EMAIL_2] or [EMAIL_3]'],
      ['key sk-proj-abcdefghij\nklmnopqrstuvwxyz0123 end', 'key [SECRET_KEY_1] end'],
      ['id AKIAIOSF\nODNN7EXAMPLE end', 'id [AWS_ACCESS_KEY_1] end'],
      [`token ghp_${'a'.repeat(20)}\n${'b'.repeat(16)} end`, 'token [GITHUB_TOKEN_1] end'],
      [`jwt ${JWT.replace('.', '.\n')} end`, 'jwt [JWT_1] end'],
      ['pay DE89370400440\n532013000 now', 'pay [IBAN_1] now'],
      ['Authorization: Bearer abcdef0123\n456789ABCDEF.xyz', 'Authorization: Bearer [BEARER_TOKEN_1]'],
      // Wrapped at a column: the head matches alone, and each whole line after it that holds a digit is its tail.
      ['key sk-proj-abcdefghijklmnopqrstuvwxyz\r\n0123456789abcdefghij\r\nk1m2\r\nnext line', 'key [SECRET_KEY_1]\r\nnext line'],
      ['key sk-proj-abcdefghij\nklmnopqrstuvwxyz0123\n4567abcd\nThanks', 'key [SECRET_KEY_1]\nThanks'],
      // As few breaks as the match needs: not the word on the line before, nor the sentence's full stop and the next line.
      ['Write to\nbob@\nexample.org.\nThanks', 'Write to\n[EMAIL_1].\nThanks'],
    ];
    for (const [text, expected] of cases) assert.equal(scanWith('all', text).texts[0], expected, JSON.stringify(text));
  });

  it('prose lines stay apart, and a match as written keeps its own ends', () => {
    const unchanged = [
      'the end\nof the line', 'Item one.\nItem two.\nsk\n-abc', 'bob@\n\nexample.com', 'bob@ \nexample.com',
      'version 1.2.\n3.4 later', 'order 1234\n5678 and 4111\n1111', 'ask\n-abcdefghijklmnopqrstuvwxyz0123',
    ];
    for (const text of unchanged) assert.equal(scanWith('all', text).texts[0], text, JSON.stringify(text));
    const kept: Array<[string, string]> = [
      // An address's greedy ends would take the word on the line before or after.
      ['Write to\nbob@example.com\nThanks', 'Write to\n[EMAIL_1]\nThanks'],
      // A key that ends its line does not take the next line's name, word or part of it.
      ['A=sk-proj-abcdefghijklmnopqrstuvwxyz\nB=sk-ant-abcdefghijklmnopqrstuvwxyz\n', 'A=[SECRET_KEY_1]\nB=[SECRET_KEY_2]\n'],
      ['sk-proj-abcdefghijklmnopqrstuvwxyz\nThanks', '[SECRET_KEY_1]\nThanks'],
      ['sk-proj-abcdefghijklmnopqrstuvwxyz\nabc1 and more', '[SECRET_KEY_1]\nabc1 and more'],
      ['AKIAIOSFODNN7EXAMPLE\nfoo', '[AWS_ACCESS_KEY_1]\nfoo'],
    ];
    for (const [text, expected] of kept) assert.equal(scanWith('all', text).texts[0], expected, JSON.stringify(text));
  });

  it('texts read as one are read with their breaks joined too', () => {
    const policy = compilePolicy(orgPolicySchema.parse({ dlp: { detectors: 'all' }, shield: { builtin: false } }));
    const outcome = scanTexts(policy, ['mail bob@', '\nexample.com now'], [[0, 1]]);
    assert.ok(!outcome.blocked);
    if (!outcome.blocked) assert.deepEqual(outcome.scan.texts, ['mail [EMAIL_1]', ' now']);
  });

  it('stays linear on adversarial runs of 100k characters with line breaks', () => {
    const inputs = [
      'a\n'.repeat(50_000), 'sk-\n'.repeat(25_000), '@\na'.repeat(33_000), 'a@b.cd\n'.repeat(14_000), 'eyJa.\n'.repeat(16_000),
      `sk-${'a'.repeat(30)}\n1\n`.repeat(2_500), 'AKIA\n'.repeat(20_000), 'DE89\n'.repeat(20_000), '\r\n'.repeat(50_000),
      // One match over thousands of breaks: each is a place it might be cut.
      `${'a\n'.repeat(50_000)}@b.cd`, `eyJ${'a\n'.repeat(20_000)}.eyJ${'b\n'.repeat(20_000)}.c`, `sk-${'a1\n'.repeat(30_000)}`,
    ];
    for (const text of inputs) {
      const started = performance.now();
      scanWith('all', text);
      const elapsed = performance.now() - started;
      assert.ok(elapsed < 250, `${JSON.stringify(text.slice(0, 12))}... took ${elapsed.toFixed(0)} ms`);
    }
  });
});

describe('candidates found by a literal', () => {
  /** Every match from the start, each search resuming where the last match ended. */
  const all = (next: NextMatch, text: string): string[] => {
    const out: string[] = [];
    for (let m = next(text, 0); m !== null; m = next(text, m.index + m[0].length)) out.push(`${m.index}:${m[0]}`);
    return out;
  };
  // Patterns with the lead first, inside, and checked by a lookbehind that reads before the candidate.
  const specs = [
    { source: 'eyJ(?<![\\w-]eyJ)[A-Za-z0-9]{2,6}\\.eyJ', lead: { text: 'J', at: 2 } },
    { source: '@[a-z]{1,4}\\.[a-z]{2}', lead: { text: '@', at: 0 } },
    { source: ':(?=[0-9a-f:])', lead: { text: ':', at: 0 } },
    { source: '-----BEGIN [A-Z]{0,3}KEY', lead: { text: 'G', at: 7 } },
  ];

  it('finds exactly what the global regex finds, on random text dense in the literals', () => {
    const alphabet = ['e', 'y', 'J', 'eyJ', 'a', '1', '.', '@', 'b.cd', ':', 'f', '-', '-----BEGIN ', 'KEY', 'G', 'x', ' '];
    let seed = 7;
    const rand = (n: number) => { seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31; return seed % n; };
    for (const spec of specs) {
      const plain = matcher({ source: spec.source });
      const led = matcher(spec);
      for (let round = 0; round < 400; round++) {
        let text = '';
        for (let i = rand(60); i > 0; i--) text += alphabet[rand(alphabet.length)];
        assert.deepEqual(all(led, text), all(plain, text), `${spec.source} on ${JSON.stringify(text)}`);
      }
    }
  });

  it('the detectors built on it find matches at the edges and after near misses', () => {
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U';
    assert.equal(scanWith(['jwt'], `${jwt} J eyJ aeyJx.eyJy.z ${jwt}`).texts[0], '[JWT_1] J eyJ aeyJx.eyJy.z [JWT_1]');
    assert.equal(scanWith(['email'], 'a@ @b.c @@ x@y.io jane@example.com').texts[0], 'a@ @b.c @@ [EMAIL_1] [EMAIL_2]');
    assert.equal(scanWith(['ip'], '12:30 std::vector 2001:db8::1, then ::1').texts[0], '12:30 std::vector [IP_1], then [IP_2]');
    const key = '-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI\n-----END EC PRIVATE KEY-----';
    assert.equal(scanWith(['private_key'], `GG -----BEGIN PUBLIC KEY----- ${key}`).texts[0], 'GG -----BEGIN PUBLIC KEY----- [PRIVATE_KEY_1]');
  });
});
