// Builds a value that a JSON Schema accepts, so a mock asked for
// `response_format: json_schema` answers something a client's `.parse()` takes.
// It covers the subset OpenAI's strict mode allows (objects, arrays, scalars,
// enum, const, anyOf, nullable type lists, $ref into $defs/definitions).

type Schema = Record<string, any>;

export function valueFor(schema: Schema | undefined, root: Schema | undefined = schema, name = 'value'): unknown {
  if (!schema || typeof schema !== 'object') return null;
  if (typeof schema.$ref === 'string') return valueFor(resolveRef(root, schema.$ref), root, name);
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  const union = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(union) && union.length > 0) return valueFor(union.find((s: Schema) => s?.type !== 'null') ?? union[0], root, name);
  const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== 'null') ?? 'null' : schema.type;
  switch (type) {
    case 'object': {
      const props: Schema = schema.properties ?? {};
      const required: string[] = Array.isArray(schema.required) ? schema.required : Object.keys(props);
      return Object.fromEntries(required.map((k) => [k, valueFor(props[k], root, k)]));
    }
    case 'array': {
      const count = Math.max(1, schema.minItems ?? 1);
      return Array.from({ length: count }, () => valueFor(schema.items, root, name));
    }
    case 'string': return name === 'location' || name === 'city' ? 'Paris' : `mock ${name}`;
    case 'integer': return Math.max(1, Math.ceil(schema.minimum ?? 1));
    case 'number': return Math.max(1.5, schema.minimum ?? 1.5);
    case 'boolean': return true;
    case 'null': return null;
    default: return properties(schema) ? valueFor({ ...schema, type: 'object' }, root, name) : null;
  }
}

const properties = (s: Schema) => s.properties && typeof s.properties === 'object';

function resolveRef(root: Schema | undefined, ref: string): Schema | undefined {
  if (ref === '#') return root;
  const path = ref.replace(/^#\//, '').split('/').map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  let at: any = root;
  for (const p of path) at = at?.[p];
  return at;
}
