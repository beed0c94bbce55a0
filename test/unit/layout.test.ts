import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, dirname } from 'node:path';
import { describe, expect, it } from 'vitest';

/*
 * The source layout's rules, read from the imports themselves: a test rather than a
 * dependency-cruiser configuration, as the rules are few and need no dependency.
 */
const SRC = resolve(import.meta.dirname, '../../src');

/** Folders under src/ that features build on: they import no feature. `model` is the domain's shared vocabulary; `common` holds none of it. */
const FOUNDATIONS = new Set(['common', 'database', 'config', 'generated', 'logging', 'model']);
/** Of dispatch/, what other folders may import: the module, which the app assembles. */
const DISPATCH_ENTRY = new Set(['dispatch/dispatch.module.ts']);

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'generated' ? [] : sources(path);
    return path.endsWith('.ts') && !path.endsWith('.spec.ts') ? [path] : [];
  });
}

/** Each relative import of the source files: `from` and `to` as paths under src/. */
function imports(): Array<{ from: string; to: string }> {
  const edges: Array<{ from: string; to: string }> = [];
  for (const file of sources(SRC)) {
    const text = readFileSync(file, 'utf8');
    for (const [, spec] of text.matchAll(/^(?:import|export)\s[^'"]*?from\s+'(\.{1,2}\/[^']+)'/gm)) {
      edges.push({ from: relative(SRC, file), to: relative(SRC, resolve(dirname(file), spec)).replace(/\.js$/, '.ts') });
    }
  }
  return edges;
}

const top = (path: string) => path.split('/')[0];

/** The cycles met walking each node's edges depth first: a node met again while still on the path closes one. */
function cyclesOf(edges: Array<{ from: string; to: string }>): string[] {
  const next = new Map<string, string[]>();
  for (const e of edges) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  const cycles: string[] = [];
  const done = new Set<string>();
  const walk = (node: string, path: string[]) => {
    if (path.includes(node)) return void cycles.push([...path.slice(path.indexOf(node)), node].join(' -> '));
    if (done.has(node)) return;
    for (const to of new Set(next.get(node) ?? [])) walk(to, [...path, node]);
    done.add(node);
  };
  for (const node of next.keys()) walk(node, []);
  return cycles;
}

describe('source layout', () => {
  const edges = imports();

  it('should read the imports it checks', () => {
    expect(edges.length).toBeGreaterThan(200);
    expect(edges).toContainEqual({ from: 'dispatch/producer.service.ts', to: 'dispatch/claim.repository.ts' });
  });

  it('should not import a feature from common/, database/, config/, logging/ or model/', () => {
    const upward = edges.filter((e) => FOUNDATIONS.has(top(e.from)) && !FOUNDATIONS.has(top(e.to)));
    expect(upward).toEqual([]);
  });

  it('should keep the domain out of common/: it imports nothing from model/', () => {
    expect(edges.filter((e) => top(e.from) === 'common' && top(e.to) === 'model')).toEqual([]);
  });

  it('should not reach into dispatch/ from another folder (only its module is public)', () => {
    const inward = edges.filter((e) => top(e.to) === 'dispatch' && top(e.from) !== 'dispatch' && !DISPATCH_ENTRY.has(e.to));
    expect(inward).toEqual([]);
  });

  it('should have no import cycle between files, type imports included', () => {
    expect(cyclesOf(edges)).toEqual([]);
  });

  it('should have no import cycle between the folders under src/, type imports included', () => {
    const between = edges
      .filter((e) => e.from.includes('/') && e.to.includes('/') && top(e.from) !== top(e.to))
      .map((e) => ({ from: top(e.from), to: top(e.to) }));
    expect(between.length).toBeGreaterThan(50);
    expect(cyclesOf(between)).toEqual([]);
  });

  it('should see a cycle where there is one', () => {
    expect(
      cyclesOf([
        { from: 'a', to: 'b' },
        { from: 'b', to: 'c' },
        { from: 'c', to: 'a' },
        { from: 'c', to: 'd' },
      ]),
    ).toEqual(['a -> b -> c -> a']);
  });

  it('should not import one controller from another', () => {
    const across = edges.filter((e) => e.from.endsWith('.controller.ts') && e.to.endsWith('.controller.ts'));
    expect(across).toEqual([]);
  });
});
