// Exports nobody imports, checked on every `npm run lint`:
//   - every exported value (function, class, constant) of a file in src must be imported by some other file (of src,
//     test or bench): one used only in its own file is no export. Tests and the benchmark count as importers, so a
//     pure function tested on its own (a parser, a rule) stays exported for them; `--verbose` lists the exports only
//     they import. An exported type may also be used in its own file only: it names part of an exported function's
//     contract (its options, its result), which a caller may want to name;
//   - the core's entry (src/proc/index.ts) exports exactly what the front ends (src/extension, src/cli, src/agents)
//     import from it: what only tests or the benchmark use, they import from its own file.
// Prints `file:line: problem` for each and exits 1 if there was any.
const { counted } = require('../counted');
const { loadProgram, projectFiles, relative, ts } = require('./program');

const CORE_ENTRY = 'src/proc/index.ts';
/** What the host calls: exported for VS Code, imported by no file. */
const ENTRY_POINTS = { 'src/extension/extension.ts': ['activate', 'deactivate'] };
const FRONT_ENDS = /^src\/(extension|cli|agents)\//;

function lineOf(decl) {
  const sf = decl.getSourceFile();
  return sf.getLineAndCharacterOfPosition(decl.getStart(sf)).line + 1;
}

/** The symbol an import or re-export names, followed through every alias to its declaration. */
function original(checker, symbol) {
  return symbol && symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
}

function main() {
  const verbose = process.argv.includes('--verbose');
  const program = loadProgram();
  const checker = program.getTypeChecker();
  const files = projectFiles(program);
  /** Original export symbol -> the files importing it (re-exports of the entry not counted). */
  const importers = new Map();
  /** Names each front-end file imports from the core's entry. */
  const fromEntry = new Set();
  const use = (symbol, file) => {
    if (!symbol) return;
    if (!importers.has(symbol)) importers.set(symbol, new Set());
    importers.get(symbol).add(file);
  };
  for (const [file, sf] of files) {
    sf.forEachChild((node) => {
      if (ts.isImportDeclaration(node) && node.importClause) {
        const target = resolvedFile(program, node, sf);
        const bindings = node.importClause.namedBindings;
        if (bindings && ts.isNamespaceImport(bindings)) {
          const module = checker.getSymbolAtLocation(node.moduleSpecifier);
          for (const s of module ? checker.getExportsOfModule(module) : []) use(original(checker, s), file);
        } else if (bindings) {
          for (const spec of bindings.elements) {
            use(original(checker, checker.getSymbolAtLocation(spec.name)), file);
            if (target === CORE_ENTRY && FRONT_ENDS.test(file)) fromEntry.add((spec.propertyName ?? spec.name).text);
          }
        }
        if (node.importClause.name) use(original(checker, checker.getSymbolAtLocation(node.importClause.name)), file);
      } else if (ts.isExportDeclaration(node) && node.exportClause && ts.isNamedExports(node.exportClause) && file !== CORE_ENTRY) {
        for (const spec of node.exportClause.elements) use(original(checker, checker.getSymbolAtLocation(spec.name)), file);
      }
    });
  }

  const problems = [];
  const testOnly = [];
  for (const [file, sf] of files) {
    if (!file.startsWith('src/')) continue;
    const module = checker.getSymbolAtLocation(sf);
    if (!module) continue;
    for (const exported of checker.getExportsOfModule(module)) {
      const decl = exported.declarations?.[0];
      if (!decl) continue;
      if (file === CORE_ENTRY) {
        if (!fromEntry.has(exported.name))
          problems.push(`${file}:${lineOf(decl)}: ${exported.name} is exported to the front ends, and none of them imports it`);
        continue;
      }
      if (relative(decl.getSourceFile().fileName) !== file) continue; // a re-export: judged where it is declared
      if (ENTRY_POINTS[file]?.includes(exported.name)) continue;
      const by = [...(importers.get(original(checker, exported)) ?? [])].filter((f) => f !== file);
      const typeOnly = !(exported.flags & ts.SymbolFlags.Value);
      if (by.length === 0 && typeOnly && usedInOwnFile(checker, sf, exported)) continue;
      if (by.length === 0) problems.push(`${file}:${lineOf(decl)}: ${exported.name} is exported, and no other file imports it`);
      else if (by.every((f) => !f.startsWith('src/'))) testOnly.push(`${file}:${lineOf(decl)}: ${exported.name} (${by.join(', ')})`);
    }
  }
  if (verbose) for (const t of testOnly) console.log(`used only by tests or the benchmark: ${t}`);
  for (const p of problems) console.error(p);
  if (problems.length > 0) {
    console.error(`unused exports: ${counted(problems.length, 'problem')}`);
    process.exit(1);
  }
}

/** Whether `symbol` is named in `sf` anywhere but where it is declared. */
function usedInOwnFile(checker, sf, symbol) {
  const declarations = new Set(symbol.declarations.map((d) => d.name).filter(Boolean));
  let used = false;
  const visit = (node) => {
    if (used) return;
    if (ts.isIdentifier(node) && node.text === symbol.name && !declarations.has(node) && checker.getSymbolAtLocation(node) === symbol)
      used = true;
    else ts.forEachChild(node, visit);
  };
  visit(sf);
  return used;
}

function resolvedFile(program, node, sf) {
  const resolved = ts.resolveModuleName(node.moduleSpecifier.text, sf.fileName, program.getCompilerOptions(), ts.sys).resolvedModule;
  return resolved && !resolved.isExternalLibraryImport ? relative(resolved.resolvedFileName) : undefined;
}

main();
