/**
 * A form generated from a JSON Schema, for the subset the deployments use: an object whose properties
 * are boolean, string, integer, number, an enum, or an array of strings (one per line), with `required`.
 * Anything else (a nested object, a non-object schema, no schema) falls back to a JSON editor, so every
 * answer the server accepts can still be written.
 */
import { useState } from 'preact/hooks';

type Schema = Record<string, unknown>;
type FieldKind = 'boolean' | 'string' | 'integer' | 'number' | 'enum' | 'strings';

interface Field {
  readonly name: string;
  readonly kind: FieldKind;
  readonly required: boolean;
  readonly options: readonly unknown[];
  readonly description: string | undefined;
}

function isObject(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function fieldKind(schema: unknown): FieldKind | undefined {
  if (!isObject(schema)) return undefined;
  if (Array.isArray(schema.enum) && schema.enum.every((value) => ['string', 'number', 'boolean'].includes(typeof value))) return 'enum';
  if (schema.type === 'boolean' || schema.type === 'string' || schema.type === 'integer' || schema.type === 'number') return schema.type;
  if (schema.type === 'array' && isObject(schema.items) && schema.items.type === 'string') return 'strings';
  return undefined;
}

/** The fields of a schema the form can draw, or undefined when it needs the JSON editor. */
export function formFields(schema: unknown): Field[] | undefined {
  if (!isObject(schema) || schema.type !== 'object' || !isObject(schema.properties)) return undefined;
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  const fields: Field[] = [];
  for (const [name, property] of Object.entries(schema.properties)) {
    const kind = fieldKind(property);
    if (kind === undefined) return undefined;
    const options = kind === 'enum' && isObject(property) ? (property.enum as unknown[]) : [];
    const description = isObject(property) && typeof property.description === 'string' ? property.description : undefined;
    fields.push({ name, kind, required: required.has(name), options, description });
  }
  return fields;
}

/** The value of a field as the form holds it (text for inputs), converted on submit. */
type Values = Record<string, string | boolean>;

function initialValues(fields: readonly Field[]): Values {
  const values: Values = {};
  for (const field of fields) values[field.name] = field.kind === 'boolean' ? false : field.kind === 'enum' ? JSON.stringify(field.options[0]) : '';
  return values;
}

function collect(fields: readonly Field[], values: Values): { value?: Record<string, unknown>; error?: string } {
  const out: Record<string, unknown> = {};
  for (const field of fields) {
    const raw = values[field.name];
    if (field.kind === 'boolean') {
      out[field.name] = raw === true;
      continue;
    }
    const text = typeof raw === 'string' ? raw : '';
    if (text === '' && field.kind !== 'enum') {
      if (field.required && field.kind !== 'string') return { error: `${field.name} is required` };
      if (field.required) out[field.name] = '';
      continue;
    }
    if (field.kind === 'string') out[field.name] = text;
    else if (field.kind === 'enum') out[field.name] = JSON.parse(text) as unknown;
    else if (field.kind === 'strings') out[field.name] = text.split('\n').filter((line) => line !== '');
    else {
      const number = Number(text);
      if (!Number.isFinite(number) || (field.kind === 'integer' && !Number.isInteger(number))) return { error: `${field.name} must be ${field.kind === 'integer' ? 'an integer' : 'a number'}` };
      out[field.name] = number;
    }
  }
  return { value: out };
}

export interface SchemaFormProps {
  /** Prefix of the controls' ids (unique per form on the page). */
  readonly id: string;
  readonly schema: unknown;
  readonly submitLabel: string;
  readonly busy?: boolean;
  readonly onSubmit: (value: unknown) => void;
}

export function SchemaForm({ id, schema, submitLabel, busy, onSubmit }: SchemaFormProps) {
  const fields = formFields(schema);
  const [values, setValues] = useState<Values>(() => (fields === undefined ? {} : initialValues(fields)));
  const [json, setJson] = useState('{}');
  const [error, setError] = useState<string | undefined>();
  const submit = (event: Event): void => {
    event.preventDefault();
    if (fields === undefined) {
      try {
        setError(undefined);
        onSubmit(JSON.parse(json) as unknown);
      } catch {
        setError('not valid JSON');
      }
      return;
    }
    const { value, error: problem } = collect(fields, values);
    setError(problem);
    if (value !== undefined) onSubmit(value);
  };
  const set = (name: string, value: string | boolean): void => setValues({ ...values, [name]: value });
  return (
    <form class="schema-form" onSubmit={submit} aria-label={submitLabel}>
      {fields === undefined ? (
        <div class="field">
          <label for={`${id}-json`}>JSON value</label>
          <textarea id={`${id}-json`} rows={5} value={json} onInput={(event) => setJson(event.currentTarget.value)} spellcheck={false} />
        </div>
      ) : (
        fields.map((field) => {
          const control = `${id}-${field.name}`;
          const label = `${field.name}${field.required ? ' (required)' : ''}`;
          const value = values[field.name];
          if (field.kind === 'boolean') {
            return (
              <div class="field field-check" key={field.name}>
                <input id={control} type="checkbox" checked={value === true} onChange={(event) => set(field.name, event.currentTarget.checked)} />
                <label for={control}>{label}</label>
              </div>
            );
          }
          return (
            <div class="field" key={field.name}>
              <label for={control}>{label}</label>
              {field.kind === 'enum' ? (
                <select id={control} value={String(value)} onChange={(event) => set(field.name, event.currentTarget.value)}>
                  {field.options.map((option) => (
                    <option key={String(option)} value={JSON.stringify(option)}>
                      {String(option)}
                    </option>
                  ))}
                </select>
              ) : field.kind === 'strings' ? (
                <textarea id={control} rows={3} value={String(value)} placeholder="one per line" onInput={(event) => set(field.name, event.currentTarget.value)} />
              ) : (
                <input
                  id={control}
                  type={field.kind === 'string' ? 'text' : 'number'}
                  step={field.kind === 'integer' ? 1 : 'any'}
                  required={field.required && field.kind !== 'string'}
                  value={String(value)}
                  onInput={(event) => set(field.name, event.currentTarget.value)}
                />
              )}
              {field.description === undefined ? null : <small>{field.description}</small>}
            </div>
          );
        })
      )}
      {error === undefined ? null : (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <button type="submit" disabled={busy === true}>
        {submitLabel}
      </button>
    </form>
  );
}
