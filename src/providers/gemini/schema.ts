// JSON Schema (as OpenAI tools and json_schema response formats carry it) ->
// Gemini's `Schema`, a subset of OpenAPI 3.0: upper-case `type`, `nullable`
// instead of a "null" type, string-only `enum`, and no references.
//
// The keyword set is the one Google's own API reference and SDK types list for
// `Schema`. A keyword is translated, dropped only when it is an annotation or
// restates Gemini's behaviour (`additionalProperties: false`: Gemini never adds
// undeclared properties), or refused with a 400 naming its exact path: a
// constraint the caller wrote must not disappear on the way.
import { GatewayError } from '../../errors.js';
import { isObj, ownEntry } from '../json-shape.js';

type Json = Record<string, any>;

const TYPES: Record<string, string> = {
  string: 'STRING', number: 'NUMBER', integer: 'INTEGER', boolean: 'BOOLEAN', array: 'ARRAY', object: 'OBJECT',
};

/** Copied as they are: Gemini gives them the JSON Schema meaning. */
const SAME = ['title', 'description', 'pattern', 'minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties', 'minimum', 'maximum', 'default', 'example', 'propertyOrdering', 'nullable'] as const;

/** Annotations that guide no generation, and JSON Schema plumbing handled elsewhere. */
const IGNORED = new Set(['$schema', '$id', '$comment', '$defs', 'definitions', 'examples', 'readOnly', 'writeOnly', 'deprecated', 'strict']);

/** Gemini documents these formats only (per type); any other is refused rather than lost. */
const FORMATS: Record<string, readonly string[]> = {
  STRING: ['enum', 'date-time'], NUMBER: ['float', 'double'], INTEGER: ['int32', 'int64'],
};

/**
 * Schemas a converted schema may hold, and how deep it may nest. Gemini takes
 * no references, so each `$ref` is inlined where it stands, and a few hundred
 * bytes of definitions that refer to one another twice over expand to 2^n
 * schemas: without a bound, one small request held a core and its memory
 * until the process died. Real tool schemas use a few hundred at most.
 */
const MAX_SCHEMAS = 5000;
const MAX_DEPTH = 64;

class Converter {
  /** `$ref`s being expanded, innermost last: a ref already on it is recursion. */
  private readonly expanding: string[] = [];
  private schemas = 0;
  private depth = 0;

  constructor(private readonly root: Json) {}

  refuse(path: string, why: string): never {
    throw new GatewayError('invalid_request', `${path}: ${why} Gemini's schema subset cannot express it.`, { param: path });
  }

  private resolve(ref: unknown, path: string): Json {
    if (typeof ref !== 'string' || !/^#\/(\$defs|definitions)\/[^/]+$/.test(ref)) {
      this.refuse(path, `only local references to "#/$defs/<name>" can be inlined, not ${JSON.stringify(ref)}.`);
    }
    const [, bag, name] = ref.split('/') as [string, string, string];
    let key: string;
    try {
      key = decodeURIComponent(name.replace(/~1/g, '/').replace(/~0/g, '~'));
    } catch {
      this.refuse(path, `the reference ${JSON.stringify(ref)} is not a well-formed URI fragment.`);
    }
    const target = this.root[bag]?.[key];
    if (!isObj(target)) this.refuse(path, `the reference ${ref} points at nothing.`);
    if (this.expanding.includes(ref)) this.refuse(path, `the reference ${ref} is recursive.`);
    return target;
  }

  convert(s: unknown, path: string): Json {
    if (++this.schemas > MAX_SCHEMAS) this.refuse(path, `the schema, with its references inlined, holds more than ${MAX_SCHEMAS} schemas.`);
    if (this.depth >= MAX_DEPTH) this.refuse(path, `the schema, with its references inlined, nests more than ${MAX_DEPTH} deep.`);
    this.depth++;
    try {
      return this.convertOne(s, path);
    } finally {
      this.depth--;
    }
  }

  private convertOne(s: unknown, path: string): Json {
    if (!isObj(s) || Array.isArray(s)) this.refuse(path, 'a schema must be an object.');
    if (s.$ref !== undefined) {
      const rest = Object.keys(s).filter((k) => k !== '$ref' && k !== 'description' && !IGNORED.has(k));
      if (rest.length > 0) this.refuse(`${path}.${rest[0]}`, 'keywords beside "$ref" are not supported.');
      const target = this.resolve(s.$ref, `${path}.$ref`);
      this.expanding.push(s.$ref);
      try {
        const out = this.convert(target, `${path}.$ref`);
        if (typeof s.description === 'string') out.description = s.description;
        return out;
      } finally { this.expanding.pop(); }
    }

    const out: Json = {};
    let nullable = false;
    for (const key of Object.keys(s)) {
      const v = s[key];
      const at = `${path}.${key}`;
      if (IGNORED.has(key) || v === undefined) continue;
      switch (key) {
        case 'type': {
          const types = Array.isArray(v) ? v : [v];
          const real = types.filter((t) => t !== 'null');
          if (real.length !== types.length) nullable = true;
          if (real.length === 0) this.refuse(at, 'a schema that only allows null is not supported.');
          const mapped = real.map((t, i) => (typeof t === 'string' && ownEntry(TYPES, t)) || this.refuse(Array.isArray(v) ? `${at}.${i}` : at, `unknown type ${JSON.stringify(t)}.`));
          if (mapped.length === 1) out.type = mapped[0];
          else out.anyOf = mapped.map((type) => ({ type }));
          break;
        }
        case 'enum': case 'const': {
          const values = key === 'enum' ? v : [v];
          if (!Array.isArray(values) || values.length === 0) this.refuse(at, 'an enum must list values.');
          if (values.includes(null)) nullable = true;
          const strings = values.filter((x: unknown) => x !== null);
          if (strings.some((x: unknown) => typeof x !== 'string')) this.refuse(at, 'Gemini enums hold strings only.');
          out.enum = strings;
          break;
        }
        case 'format':
          out.format = v;
          break;
        case 'properties': {
          if (!isObj(v)) this.refuse(at, 'properties must be an object.');
          const props: Json = {};
          for (const name of Object.keys(v)) props[name] = this.convert(v[name], `${at}.${name}`);
          out.properties = props;
          break;
        }
        case 'required':
          if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) this.refuse(at, 'required must list property names.');
          out.required = v;
          break;
        case 'items':
          if (Array.isArray(v)) this.refuse(at, 'tuple items (an array of schemas) are not supported.');
          out.items = this.convert(v, at);
          break;
        case 'anyOf':
          out.anyOf = this.alternatives(v, at, () => { nullable = true; });
          break;
        case 'allOf':
          // One member is a wrapper (zod and pydantic emit it around a $ref to attach a description).
          if (!Array.isArray(v) || v.length !== 1) this.refuse(at, 'allOf with more than one schema is not supported.');
          Object.assign(out, this.convert(v[0], `${at}.0`));
          break;
        case 'additionalProperties':
          // false and true leave Gemini's output valid; a schema for extra keys (a map) cannot be expressed.
          if (v !== false && v !== true) this.refuse(at, 'a schema for additional properties (a map) is not supported.');
          break;
        case 'exclusiveMinimum': case 'exclusiveMaximum': {
          // Exact for integers (zod's .positive() emits exclusiveMinimum: 0); a number bound would loosen.
          const isInt = s.type === 'integer' || (Array.isArray(s.type) && s.type.includes('integer') && !s.type.includes('number'));
          if (typeof v !== 'number' || !isInt || !Number.isInteger(v)) this.refuse(at, 'an exclusive bound is only translated for integers.');
          if (key === 'exclusiveMinimum') out.minimum = Math.max(v + 1, typeof s.minimum === 'number' ? s.minimum : -Infinity);
          else out.maximum = Math.min(v - 1, typeof s.maximum === 'number' ? s.maximum : Infinity);
          break;
        }
        default:
          if ((SAME as readonly string[]).includes(key)) {
            if (key === 'minimum' && out.minimum !== undefined) out.minimum = Math.max(out.minimum, v);
            else if (key === 'maximum' && out.maximum !== undefined) out.maximum = Math.min(out.maximum, v);
            else if (key === 'nullable') { if (v === true) nullable = true; }
            else out[key] = v;
            break;
          }
          this.refuse(at, `the keyword "${key}" is not supported.`);
      }
    }

    if (out.type === undefined && out.anyOf === undefined) {
      // JSON Schema lets the type follow from other keywords; Gemini needs it said.
      if (out.properties) out.type = 'OBJECT';
      else if (out.items) out.type = 'ARRAY';
      else if (out.enum) out.type = 'STRING';
      else this.refuse(path, 'a schema without a type (any value) is not supported.');
    }
    if (out.format !== undefined && !(FORMATS[out.type] ?? []).includes(out.format)) {
      this.refuse(`${path}.format`, `the format ${JSON.stringify(out.format)} is not supported for ${out.type ?? 'this'} values.`);
    }
    if (out.enum && out.type !== 'STRING') this.refuse(`${path}.enum`, 'Gemini enums hold strings only.');
    if (nullable) out.nullable = true;
    // A union with null reads as one nullable schema; Gemini handles that better than anyOf.
    if (out.anyOf?.length === 1 && out.type === undefined) {
      const [only] = out.anyOf;
      delete out.anyOf;
      return { ...only, ...out };
    }
    return out;
  }

  private alternatives(v: unknown, at: string, sawNull: () => void): Json[] {
    if (!Array.isArray(v) || v.length === 0) this.refuse(at, 'anyOf must list schemas.');
    const out: Json[] = [];
    v.forEach((alt, i) => {
      if (isObj(alt) && alt.type === 'null' && Object.keys(alt).length === 1) { sawNull(); return; }
      out.push(this.convert(alt, `${at}.${i}`));
    });
    if (out.length === 0) this.refuse(at, 'a schema that only allows null is not supported.');
    return out;
  }
}

/**
 * Converts `schema`, whose place in the caller's body is `path` (e.g.
 * `tools.0.function.parameters`): every 400 names the offending keyword below it.
 */
export function toGeminiSchema(schema: unknown, path: string): Json {
  const root = isObj(schema) ? schema : {};
  return new Converter(root).convert(schema, path);
}
