/**
 * package.json as users meet it: every string they read comes from package.nls.json (so it can be translated),
 * every setting says its scope, and durations are in seconds, the older names kept as deprecated aliases that name
 * their replacement.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { REPO } from '../../support/repo';

const manifest = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8'));
const nls: Record<string, string> = JSON.parse(fs.readFileSync(path.join(REPO, 'package.nls.json'), 'utf8'));

/** Manifest fields whose strings users read (in the palette, the view, the settings, the Marketplace). */
const USER_FACING = new Set([
  'displayName',
  'description',
  'title',
  'category',
  'name',
  'contextualTitle',
  'contents',
  'label',
  'markdownDescription',
  'enumDescriptions',
  'deprecationMessage',
  'markdownDeprecationMessage',
]);

/** Values that are data, not text for users: sample settings, defaults. */
const DATA = new Set(['examples', 'default']);

/** Every user-facing string of `value`, with where it is. */
function userFacing(value: unknown, where: string, out: { where: string; text: string }[] = []): { where: string; text: string }[] {
  if (Array.isArray(value)) value.forEach((v, i) => userFacing(v, `${where}[${i}]`, out));
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const at = `${where}.${k}`;
      if (DATA.has(k)) continue;
      if (USER_FACING.has(k) && typeof v === 'string') out.push({ where: at, text: v });
      else if (USER_FACING.has(k) && Array.isArray(v) && v.every((x) => typeof x === 'string'))
        v.forEach((x, i) => out.push({ where: `${at}[${i}]`, text: x }));
      else userFacing(v, at, out);
    }
  }
  return out;
}

const settings: Record<string, Record<string, unknown>> = manifest.contributes.configuration.properties;

describe('the manifest (package.json)', () => {
  const strings = [
    { where: 'displayName', text: manifest.displayName },
    { where: 'description', text: manifest.description },
    ...userFacing(manifest.contributes, 'contributes'),
    ...userFacing(manifest.capabilities, 'capabilities'),
  ];

  it('takes every string a user reads from package.nls.json', () => {
    assert.ok(strings.length > 40, `only ${strings.length} strings found`);
    const literal = strings.filter((s) => !/^%[^%]+%$/.test(s.text));
    assert.deepStrictEqual(literal, [], 'not localized');
    const missing = strings.filter((s) => !(s.text.slice(1, -1) in nls));
    assert.deepStrictEqual(missing, [], 'keys not in package.nls.json');
  });

  it('has no string in package.nls.json that nothing uses', () => {
    const used = new Set(strings.map((s) => s.text.slice(1, -1)));
    assert.deepStrictEqual(
      Object.keys(nls).filter((k) => !used.has(k)),
      [],
    );
  });

  it('gives every setting a scope; where a remote machine decides, its value counts (machine-overridable)', () => {
    const scopes = Object.fromEntries(Object.entries(settings).map(([k, v]) => [k, v.scope]));
    const valid = ['application', 'machine', 'machine-overridable', 'window', 'resource', 'language-overridable'];
    assert.deepStrictEqual(
      Object.entries(scopes).filter(([, s]) => !valid.includes(s as string)),
      [],
      'settings without a valid scope',
    );
    // Whether a cgroup can be had is a fact of the machine the extension runs on.
    assert.strictEqual(scopes['agentTrees.cgroups'], 'machine-overridable');
  });

  it('counts durations in seconds; an older name in another unit is a deprecated alias that names its replacement', () => {
    const durations = Object.keys(settings).filter((k) => /(Seconds|Minutes|Ms)$/.test(k));
    assert.ok(durations.length >= 5, durations.join(', '));
    for (const key of durations.filter((k) => !k.endsWith('Seconds'))) {
      const spec = settings[key];
      const message = nls[String(spec.markdownDeprecationMessage ?? '').slice(1, -1)];
      assert.ok(message, `${key} is in another unit and not deprecated`);
      const replacement = /#(agentTrees\.\w+Seconds)#/.exec(message)?.[1];
      assert.ok(replacement && settings[replacement], `${key}: its deprecation names no setting in seconds: ${message}`);
      assert.strictEqual(spec.default, undefined, `${key}: a deprecated alias has no default (its replacement has)`);
      assert.strictEqual(spec.scope, settings[replacement].scope, `${key}: the same scope as ${replacement}`);
    }
  });
});
