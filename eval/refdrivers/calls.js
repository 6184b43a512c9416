// Every call and `new` in a TypeScript source tree, resolved by the TypeScript language service's
// go-to-definition: one JSON line per call landing on a function, method, constructor or class
// (or a const holding a function) with a body in the tree.
const path = require("path");
const fs = require("fs");
const ts = require(process.env.MEMTREE_TYPESCRIPT || "typescript");
const root = path.resolve(process.argv[2]);
const files = [];
(function walk(d) {
  for (const e of fs.readdirSync(d, { withFileTypes: true })) {
    const p = path.join(d, e.name);
    if (e.isDirectory()) { if (e.name !== "node_modules") walk(p); }
    else if (/\.(ts|tsx|mts|cts)$/.test(e.name) && !/\.d\.[mc]?ts$/.test(e.name)) files.push(p);
  }
})(root);
const options = { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler,
  allowJs: false, strict: false, skipLibCheck: true, noEmit: true, jsx: ts.JsxEmit.Preserve };
const host = {
  getScriptFileNames: () => files, getScriptVersion: () => "1",
  getScriptSnapshot: (f) => fs.existsSync(f) ? ts.ScriptSnapshot.fromString(fs.readFileSync(f, "utf8")) : undefined,
  getCurrentDirectory: () => root, getCompilationSettings: () => options,
  getDefaultLibFileName: (o) => ts.getDefaultLibFilePath(o), fileExists: ts.sys.fileExists, readFile: ts.sys.readFile,
  readDirectory: ts.sys.readDirectory, directoryExists: ts.sys.directoryExists, getDirectories: ts.sys.getDirectories,
};
const ls = ts.createLanguageService(host, ts.createDocumentRegistry());
const program = ls.getProgram();
const inTree = (f) => path.resolve(f).startsWith(root + path.sep) && files.includes(path.resolve(f));
function declAt(fileName, span) {  // the declaration node a definition span names
  const sf = program.getSourceFile(fileName);
  let found;
  (function visit(n) {
    if (n.pos <= span.start && span.start < n.end) { found = n; ts.forEachChild(n, visit); }
  })(sf);
  let n = found;
  while (n && !ts.isFunctionLike(n) && !ts.isClassLike(n) && !ts.isVariableDeclaration(n) && !ts.isPropertyDeclaration(n)
         && !ts.isPropertyAssignment(n)) n = n.parent;
  if (n && ts.isFunctionLike(n) && !n.body && n.name) {  // an overload's signature: its implementation
    const sym = program.getTypeChecker().getSymbolAtLocation(n.name);
    const impl = sym && (sym.declarations || []).find((x) => ts.isFunctionLike(x) && x.body);
    if (impl) return impl;
  }
  return n;
}
function callable(d) {  // a declaration with a body a call runs
  if (!d) return false;
  if (ts.isClassLike(d)) return true;
  if (ts.isFunctionLike(d)) return !!d.body;
  const init = d.initializer;
  return !!init && (ts.isArrowFunction(init) || ts.isFunctionExpression(init));
}
for (const f of files) {
  const sf = program.getSourceFile(f);
  (function visit(n) {
    let callee;
    if (ts.isCallExpression(n) || ts.isNewExpression(n)) callee = n.expression;
    else if (ts.isDecorator(n)) callee = ts.isCallExpression(n.expression) ? undefined : n.expression;
    if (callee) {
      while (ts.isParenthesizedExpression(callee) || ts.isNonNullExpression(callee)) callee = callee.expression;
      const name = ts.isPropertyAccessExpression(callee) ? callee.name : ts.isIdentifier(callee) ? callee : undefined;
      if (name) {
        const defs = (ls.getDefinitionAtPosition(f, name.getStart(sf)) || [])
          .filter((d) => inTree(d.fileName)).map((d) => [d, declAt(d.fileName, d.textSpan)])
          .filter(([, decl]) => callable(decl));
        // `new C()` lands on class C (as a Python call of a class does), not also on its constructor
        const hasClass = defs.some(([, decl]) => ts.isClassLike(decl));
        for (const [d, decl] of defs) {
          if (hasClass && ts.isConstructorDeclaration(decl)) continue;
          const to = decl.getSourceFile().getLineAndCharacterOfPosition(decl.getStart()).line + 1;
          const from = sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1;
          process.stdout.write(JSON.stringify({ from_file: f, from_line: from, to_file: path.resolve(d.fileName), to_line: to }) + "\n");
        }
      }
    }
    ts.forEachChild(n, visit);
  })(sf);
}
