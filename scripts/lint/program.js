// The TypeScript program of the whole project (tsconfig.json: src, test, bench, scripts), and the imports of each
// file resolved to files, for the import checks run by `npm run lint` (layers.js, unusedExports.js).
const path = require('path');
const ts = require('typescript');

const ROOT = path.resolve(__dirname, '..', '..');

/** The project's program, as `tsc -p tsconfig.json` builds it (nothing is emitted). */
function loadProgram() {
  const configFile = path.join(ROOT, 'tsconfig.json');
  const read = ts.readConfigFile(configFile, ts.sys.readFile);
  if (read.error) throw new Error(ts.flattenDiagnosticMessageText(read.error.messageText, '\n'));
  const config = ts.parseJsonConfigFileContent(read.config, ts.sys, ROOT);
  return ts.createProgram({ rootNames: config.fileNames, options: { ...config.options, noEmit: true } });
}

/** A file's path from the repository root, with forward slashes: `src/proc/core.ts`. */
function relative(fileName) {
  return path.relative(ROOT, fileName).split(path.sep).join('/');
}

/**
 * Every module a file names: import and export declarations (type-only ones too: a circle of types is a circle),
 * `import x = require(...)`, and `require(...)` / `import(...)` of a string. Each with the module's text, the
 * file it resolves to (undefined for a package or a built-in), and its line.
 */
function importsOf(program, sourceFile) {
  const out = [];
  const add = (literal) => {
    const specifier = literal.text;
    const resolved = ts.resolveModuleName(specifier, sourceFile.fileName, program.getCompilerOptions(), ts.sys).resolvedModule;
    const file = resolved && !resolved.isExternalLibraryImport ? relative(resolved.resolvedFileName) : undefined;
    const line = sourceFile.getLineAndCharacterOfPosition(literal.getStart(sourceFile)).line + 1;
    out.push({ specifier, file, line });
  };
  const visit = (node) => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      add(node.moduleSpecifier);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      const e = node.moduleReference.expression;
      if (ts.isStringLiteral(e)) add(e);
    } else if (ts.isCallExpression(node) && node.arguments.length === 1 && ts.isStringLiteral(node.arguments[0])) {
      const callee = node.expression;
      if ((ts.isIdentifier(callee) && callee.text === 'require') || callee.kind === ts.SyntaxKind.ImportKeyword) add(node.arguments[0]);
    }
    ts.forEachChild(node, visit);
  };
  visit(sourceFile);
  return out;
}

/** The program's own source files (no declaration files of packages), by their path from the root. */
function projectFiles(program) {
  const files = new Map();
  for (const sf of program.getSourceFiles()) {
    const rel = relative(sf.fileName);
    if (!rel.startsWith('node_modules/') && !rel.startsWith('..')) files.set(rel, sf);
  }
  return files;
}

module.exports = { ROOT, ts, loadProgram, relative, importsOf, projectFiles };
