//! One parse tree → the facts the index keeps of a file: its definitions,
//! the calls and other references inside each of them, and its imports.
//!
//! Why facts and not the tree: the tree of a large repository is hundreds
//! of megabytes and dies with the process; the facts are about the size of
//! the source (as JSON), are saved per file with the file's content hash, and answer
//! every question the tools ask (where is X, who calls X, what does X call,
//! which tests touch X) without parsing again. The walk is iterative, so a
//! deeply nested generated file cannot overflow the stack.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use tree_sitter::Node;

use super::lang::{Kind, Lang, Role};
use super::macros::Macros;

/// A definition: a function, method, type, macro…
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Def {
    pub name: String,
    pub kind: Kind,
    /// The type, class, trait or namespace it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// First and last line, 1-based, inclusive.
    pub line: u32,
    pub end: u32,
    /// Its header, whitespace collapsed: what it takes and returns.
    pub sig: String,
    /// Test code: a test, or a helper in a test file or test module.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub test: bool,
    /// A Go method's receiver name (`c` in `func (c *Command) Run()`):
    /// a call through it is a call through `self`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver: Option<String>,
    /// Its parameters' names: a call of one (`f(x)` with `f` a parameter)
    /// calls whatever was passed, not a definition of that name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub params: Vec<String>,
}

/// A use of a name: a call, or any other mention (a type in a signature, a
/// function passed as a value).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Ref {
    pub name: String,
    pub line: u32,
    /// The definition of this file the use is inside (its index in
    /// `defs`), if any: top-level code has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within: Option<u32>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub call: bool,
    /// What the name was reached through: `Foo` in `Foo::new()`, `self`
    /// in `self.parse()`. Resolution uses it to pick among namesakes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qual: Option<String>,
    /// The qualifier is a path (`a::b()`, C++'s `A::b()`): a type or a
    /// module by the language's syntax, never a value.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub path: bool,
}

/// What a file contributes to the index.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Facts {
    pub defs: Vec<Def>,
    pub refs: Vec<Ref>,
    /// The imported paths, as written (`crate::parse`, `./router`,
    /// `zutil.h`).
    pub imports: Vec<String>,
    /// The grammar found errors: what parsed is indexed, the rest is not.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
}

/// Names that mean the receiver of a method, for resolution.
pub(crate) const SELF: &[&str] = &["self", "Self", "this", "cls", "super"];

/// Calls that declare a test by a string in JavaScript test runners.
const JS_TEST_CALLS: &[&str] = &["it", "test", "describe", "specify", "context", "suite"];

/// Kinds of leaf that name something; anything else (a literal, a keyword)
/// is not a reference.
const NAME_LEAVES: &[&str] = &[
    "identifier",
    "type_identifier",
    "field_identifier",
    "property_identifier",
    "shorthand_property_identifier",
    "namespace_identifier",
    "constant",
];

/// Whether a path is test code by the conventions of its ecosystem: a
/// `tests/` folder, `test_x.py`, `x_test.go`, `x.test.js`, `x.spec.ts`.
pub(crate) fn test_path(path: &str) -> bool {
    let mut parts = path.split('/').collect::<Vec<_>>();
    let file = parts.pop().unwrap_or("");
    if parts.iter().any(|d| {
        matches!(
            *d,
            "test" | "tests" | "testing" | "__tests__" | "spec" | "specs" | "t"
        )
    }) {
        return true;
    }
    let stem = file.split('.').next().unwrap_or("");
    stem.starts_with("test_")
        || stem == "test"
        || stem == "tests"
        || stem == "conftest"
        || stem.ends_with("_test")
        || stem.ends_with("_tests")
        || stem.ends_with("_spec")
        || file.contains(".test.")
        || file.contains(".spec.")
}

/// The facts of one file. `path` is relative to the worktree; `macros`
/// (C and C++) are blanked before parsing, in place.
pub(crate) fn extract(lang: Lang, path: &str, src: &[u8], macros: &Macros) -> Facts {
    let mut parser = tree_sitter::Parser::new();
    if parser.set_language(&lang.grammar()).is_err() {
        return Facts {
            partial: true,
            ..Facts::default()
        };
    }
    let blanked = match lang {
        // The file's own `#define`s too (`#define PUGI__FN inline` in a
        // .cpp file).
        Lang::C | Lang::Cpp => {
            let mut own = macros.clone();
            own.scan(&String::from_utf8_lossy(src));
            own.apply(src)
        }
        _ => Vec::new(),
    };
    let parsed = if blanked.is_empty() { src } else { &blanked };
    let Some(tree) = parser.parse(parsed, None) else {
        return Facts {
            partial: true,
            ..Facts::default()
        };
    };
    let mut w = Walk {
        lang,
        src,
        parsed,
        test_file: test_path(path),
        facts: Facts {
            partial: tree.root_node().has_error(),
            ..Facts::default()
        },
        scopes: Vec::new(),
        claimed: HashSet::new(),
        seen: HashSet::new(),
    };
    let mut cursor = tree.walk();
    loop {
        w.enter(cursor.node());
        if cursor.goto_first_child() {
            continue;
        }
        loop {
            w.leave(cursor.node());
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return w.facts;
            }
        }
    }
}

/// A node that opened a scope: a definition, or a container of them.
struct Scope {
    node: usize,
    def: Option<u32>,
    /// The name its children belong to (a class, an `impl`'s type).
    container: Option<String>,
    /// Whether a function directly inside is a method (a class's, an
    /// `impl`'s), not a module's function.
    methods: bool,
}

struct Walk<'a> {
    lang: Lang,
    src: &'a [u8],
    /// What was parsed: `src` with the macros blanked (signatures read it,
    /// so `CJSON_PUBLIC(cJSON *) cJSON_Parse(…)` shows as a declaration).
    parsed: &'a [u8],
    test_file: bool,
    facts: Facts,
    scopes: Vec<Scope>,
    /// Name nodes already used (a definition's own name, a callee) that
    /// the leaf pass must not count again as mentions.
    claimed: HashSet<usize>,
    /// Mentions already recorded: one per name per definition is enough
    /// to say that the definition uses it.
    seen: HashSet<(String, Option<u32>)>,
}

impl<'a> Walk<'a> {
    fn text(&self, n: Node) -> &'a str {
        n.utf8_text(self.src).unwrap_or("")
    }

    /// What a definition made here belongs to, and whether a function
    /// here is a method: the innermost class, `impl` or module, unless a
    /// function is nearer (a function nested in a method is not a method).
    fn owner(&self) -> (Option<String>, bool) {
        for s in self.scopes.iter().rev() {
            if s.def
                .is_some_and(|d| self.facts.defs[d as usize].kind.runs())
            {
                return (None, false);
            }
            if let Some(c) = &s.container {
                return (Some(c.clone()), s.methods);
            }
        }
        (None, false)
    }

    /// The innermost definition code runs in; else the innermost one.
    fn within(&self) -> Option<u32> {
        let defs = || self.scopes.iter().rev().filter_map(|s| s.def);
        defs()
            .find(|&d| self.facts.defs[d as usize].kind.runs())
            .or_else(|| defs().next())
    }

    fn in_test(&self) -> bool {
        self.test_file
            || self
                .scopes
                .iter()
                .filter_map(|s| s.def)
                .any(|d| self.facts.defs[d as usize].test)
    }

    fn leave(&mut self, n: Node) {
        if self.scopes.last().is_some_and(|s| s.node == n.id()) {
            self.scopes.pop();
        }
    }

    fn enter(&mut self, n: Node) {
        let kind = n.kind();
        if self.lang.is_import(kind) {
            let t = self
                .text(n)
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            self.facts
                .imports
                .push(crate::text::redact::redact(&crate::text::clip::clip(
                    &t, 200,
                )));
        }
        if self.lang.is_call(kind) {
            self.call(n);
        } else if self.lang == Lang::Rust && kind == "identifier" {
            self.call_in_macro(n);
        }
        match self.lang.role(kind) {
            Some(Role::Def(k)) => self.def(n, k),
            Some(Role::Container) => {
                let name = n
                    .child_by_field_name("type")
                    .map(|t| bare_type(self.text(t)));
                self.scopes.push(Scope {
                    node: n.id(),
                    def: None,
                    container: name,
                    methods: true,
                });
            }
            Some(Role::Bound) => self.bound(n),
            Some(Role::Prototype) => self.prototype(n),
            None => {}
        }
        if n.child_count() == 0 && NAME_LEAVES.contains(&kind) && !self.claimed.contains(&n.id()) {
            let name = self.text(n);
            if name.chars().count() > 1 {
                let within = self.within();
                if self.seen.insert((name.to_string(), within)) {
                    self.facts.refs.push(Ref {
                        name: name.to_string(),
                        line: n.start_position().row as u32 + 1,
                        within,
                        call: false,
                        qual: None,
                        path: false,
                    });
                }
            }
        }
    }

    fn call(&mut self, n: Node) {
        let Some(callee) = n.child_by_field_name(self.lang.callee_field(n.kind())) else {
            return;
        };
        let Some((name_node, qual, path)) = self.last_name(callee) else {
            return;
        };
        let name = self.text(name_node).to_string();
        self.claimed.insert(name_node.id());
        self.facts.refs.push(Ref {
            name: name.clone(),
            line: n.start_position().row as u32 + 1,
            within: self.within(),
            call: true,
            qual,
            path,
        });
        // CommonJS: `require('./router')` imports as `import` does.
        if matches!(self.lang, Lang::JavaScript | Lang::TypeScript | Lang::Tsx)
            && name == "require"
            && let Some(args) = n.child_by_field_name("arguments")
            && args.named_child(0).is_some_and(|a| a.kind() == "string")
        {
            let t = crate::text::clip::clip(&crate::text::redact::redact(self.text(n)), 200);
            self.facts.imports.push(t);
        }
        // `it("parses a range", () => …)`: a test named by its string.
        if matches!(self.lang, Lang::JavaScript | Lang::TypeScript | Lang::Tsx)
            && JS_TEST_CALLS.contains(&name.as_str())
            && let Some(args) = n.child_by_field_name("arguments")
            && let Some(first) = args.named_child(0)
            && matches!(first.kind(), "string" | "template_string")
        {
            let title =
                crate::text::redact::redact(self.text(first).trim_matches(['"', '\'', '`']));
            self.push_def(n, title, Kind::Test, None, true);
        }
    }

    /// A call inside a macro's arguments (`assert_eq!(parse(s), 1)`): the
    /// grammar leaves those as tokens, so a name followed by a
    /// parenthesised group is taken as a call, and what precedes a `::` or
    /// `.` before it as its qualifier.
    fn call_in_macro(&mut self, n: Node) {
        if n.parent().is_none_or(|p| p.kind() != "token_tree") {
            return;
        }
        let Some(next) = n.next_sibling().filter(|s| s.kind() == "token_tree") else {
            return;
        };
        if !self.text(next).starts_with('(') {
            return;
        }
        let sep = n.prev_sibling().map(|p| self.text(p)).unwrap_or("");
        let path = sep == "::";
        let qual = n
            .prev_sibling()
            .filter(|p| matches!(self.text(*p), "::" | "."))
            .and_then(|p| p.prev_sibling())
            .filter(|q| matches!(q.kind(), "identifier" | "self"))
            .map(|q| bare_type(self.text(q)));
        self.claimed.insert(n.id());
        self.facts.refs.push(Ref {
            name: self.text(n).to_string(),
            line: n.start_position().row as u32 + 1,
            within: self.within(),
            call: true,
            qual,
            path,
        });
    }

    /// The name a callee expression ends in (`parse` in `a::b::parse`,
    /// `x.parse`, `parse::<T>`), and what it was reached through.
    fn last_name(&self, mut n: Node<'a>) -> Option<(Node<'a>, Option<String>, bool)> {
        let mut qual = None;
        let mut path = false;
        for _ in 0..16 {
            if n.child_count() == 0 {
                return Some((n, qual, path));
            }
            if let Some((field, q)) = ["path", "object", "operand", "scope", "argument", "value"]
                .iter()
                .find_map(|f| Some((*f, n.child_by_field_name(f)?)))
            {
                path = matches!(field, "path" | "scope");
                let q = self.text(q);
                let last = q
                    .rsplit(['.', ':', '>'])
                    .find(|s| !s.is_empty())
                    .unwrap_or(q);
                qual = Some(bare_type(last));
            }
            n = [
                "name",
                "field",
                "property",
                "attribute",
                "function",
                "macro",
            ]
            .iter()
            .find_map(|f| n.child_by_field_name(f))?;
        }
        None
    }

    fn def(&mut self, n: Node, kind: Kind) {
        // A `struct s *p` is a use; only a body makes it a definition.
        if matches!(
            n.kind(),
            "struct_specifier" | "union_specifier" | "class_specifier" | "enum_specifier"
        ) && n.child_by_field_name("body").is_none()
        {
            return;
        }
        let (name_node, scope) = match self.def_name(n) {
            Some(x) => x,
            None => return,
        };
        let name = self.text(name_node).to_string();
        self.claimed.insert(name_node.id());
        let (owner, methods) = self.owner();
        // Go: `func (a *Assertions) Equal(…)` belongs to `Assertions`.
        let receiver = n
            .child_by_field_name("receiver")
            .and_then(|r| r.named_child(0))
            .and_then(|p| p.child_by_field_name("type"))
            .map(|t| bare_type(self.text(t)));
        let method = scope.is_some() || receiver.is_some() || methods;
        let container = scope.or(receiver).or(owner);
        let mut kind = match kind {
            Kind::Function if method && container.is_some() => Kind::Method,
            k => k,
        };
        // Python's `@overload` stubs and TypeScript's overload signatures
        // declare; the definition with the body is the one to show.
        let decorated = n.parent().filter(|p| p.kind() == "decorated_definition");
        if decorated.is_some_and(|d| {
            self.text(d)
                .lines()
                .take_while(|l| l.trim_start().starts_with('@'))
                .any(|l| l.contains("overload"))
        }) {
            kind = Kind::Prototype;
        }
        // C and C++ test macros: `TEST(parses_a_range) { … }`,
        // `TEST_F(Suite, case)` name a test by their arguments.
        let (name, kind, forced_test) = match self.c_test_name(n, &name) {
            Some(t) => (t, Kind::Test, true),
            None => (name, kind, false),
        };
        let test = forced_test || self.test_mark(n, &name, kind);
        let this = n
            .child_by_field_name("receiver")
            .and_then(|r| r.named_child(0))
            .and_then(|p| p.child_by_field_name("name"))
            .map(|x| self.text(x).to_string());
        self.push_def(n, name, kind, container, test);
        if let Some(def) = self.facts.defs.last_mut() {
            if let Some(d) = decorated {
                // Its decorators are part of it (`@contextmanager`).
                def.line = d.start_position().row as u32 + 1;
            }
            def.receiver = this;
        }
    }

    /// The test a C or C++ test macro defines (`TEST_XML(dom_text, "<a/>")`,
    /// `TEST_F(Suite, Case)`): its arguments joined, or `None` when the
    /// definition is not one (an all-capitals name holding `TEST`).
    fn c_test_name(&self, n: Node, name: &str) -> Option<String> {
        if !matches!(self.lang, Lang::C | Lang::Cpp)
            || !name.contains("TEST")
            || name.chars().any(|c| c.is_ascii_lowercase())
        {
            return None;
        }
        let mut d = n.child_by_field_name("declarator");
        while let Some(x) = d {
            if let Some(params) = x.child_by_field_name("parameters") {
                let t = self.text(params).trim_matches(['(', ')']);
                let args: Vec<&str> = t
                    .split(',')
                    .map(str::trim)
                    .filter(|a| !a.is_empty() && a.chars().all(|c| c.is_alphanumeric() || c == '_'))
                    .collect();
                return (!args.is_empty()).then(|| args.join("."));
            }
            d = x.child_by_field_name("declarator");
        }
        None
    }

    /// A definition's name node, and the scope a qualified name gives it
    /// (`Foo` in C++'s `void Foo::bar()`).
    fn def_name(&self, n: Node<'a>) -> Option<(Node<'a>, Option<String>)> {
        if let Some(name) = n.child_by_field_name("name") {
            return match name.kind() {
                "identifier"
                | "type_identifier"
                | "field_identifier"
                | "property_identifier"
                | "constant"
                | "namespace_identifier"
                | "private_property_identifier" => Some((name, None)),
                _ => self.declared(name),
            };
        }
        // C: the name is deep in the declarator (`*f(int)`, `(*p)[3]`).
        n.child_by_field_name("declarator")
            .and_then(|d| self.declared(d))
    }

    /// The name a C declarator or a qualified name declares.
    fn declared(&self, mut n: Node<'a>) -> Option<(Node<'a>, Option<String>)> {
        for _ in 0..16 {
            match n.kind() {
                "identifier"
                | "field_identifier"
                | "type_identifier"
                | "destructor_name"
                | "operator_name"
                | "property_identifier" => return Some((n, None)),
                "qualified_identifier" => {
                    let scope = n.child_by_field_name("scope").map(|s| self.text(s));
                    let (name, _) = self.declared(n.child_by_field_name("name")?)?;
                    return Some((name, scope.map(bare_type)));
                }
                _ => n = n.child_by_field_name("declarator")?,
            }
        }
        None
    }

    /// `const f = () => …`, `X.prototype.f = function …`, `{ f: function … }`:
    /// a definition when the bound value is a function or a class.
    fn bound(&mut self, n: Node) {
        let (target, value) = match n.kind() {
            "variable_declarator" => (
                n.child_by_field_name("name"),
                n.child_by_field_name("value"),
            ),
            "assignment_expression" | "assignment" => (
                n.child_by_field_name("left"),
                n.child_by_field_name("right"),
            ),
            _ => (n.child_by_field_name("key"), n.child_by_field_name("value")),
        };
        let (Some(target), Some(value)) = (target, value) else {
            return;
        };
        // A value bound at the top of a module (`export const schema =
        // z.object(…)`, `WIN = sys.platform == "win32"`) is a constant of
        // it; inside a function it is a local.
        let top = self
            .scopes
            .iter()
            .all(|s| s.def.is_none() && s.container.is_none());
        let kind = match value.kind() {
            "arrow_function"
            | "function_expression"
            | "function"
            | "generator_function"
            | "lambda" => Kind::Function,
            "class" => Kind::Class,
            _ if top && n.kind() != "pair" && target.kind() == "identifier" => Kind::Const,
            _ => return,
        };
        let (name_node, container) = match target.kind() {
            "member_expression" => {
                let Some(p) = target.child_by_field_name("property") else {
                    return;
                };
                // `Router.prototype.handle`, `exports.handle`, `res.send`.
                let obj = target
                    .child_by_field_name("object")
                    .map(|o| self.text(o).trim_end_matches(".prototype").to_string())
                    .map(|o| bare_type(o.rsplit('.').next().unwrap_or(&o)));
                (
                    p,
                    obj.filter(|o| !matches!(o.as_str(), "exports" | "module")),
                )
            }
            "identifier" | "property_identifier" | "string" => (target, None),
            _ => return,
        };
        let name = self.text(name_node).trim_matches(['"', '\'']).to_string();
        self.claimed.insert(name_node.id());
        let (owner, methods) = self.owner();
        let method = container.is_some() || methods;
        let container = container.or(owner);
        let kind = match kind {
            Kind::Function if method && container.is_some() => Kind::Method,
            k => k,
        };
        let test = self.test_mark(n, &name, kind);
        self.push_def(n, name, kind, container, test);
    }

    /// A C or C++ declaration of a function without a body.
    fn prototype(&mut self, n: Node) {
        // A declaration inside a function body is a local variable.
        if self
            .within()
            .is_some_and(|d| self.facts.defs[d as usize].kind.runs())
        {
            return;
        }
        let mut d = n.child_by_field_name("declarator");
        let mut is_fn = false;
        for _ in 0..8 {
            let Some(x) = d else { break };
            if x.kind() == "function_declarator" {
                is_fn = true;
                break;
            }
            d = x.child_by_field_name("declarator");
        }
        if !is_fn {
            return;
        }
        let Some((name_node, scope)) = d.and_then(|d| self.declared(d)) else {
            return;
        };
        let name = self.text(name_node).to_string();
        self.claimed.insert(name_node.id());
        let container = scope.or_else(|| self.owner().0);
        // An old-style definition whose parameter types are typedef
        // names (`f(file) gzFile file; { … }`) parses as a declaration,
        // the parameters' declarations and a block beside them: it is a
        // function, and the block is its body.
        let mut next = n.next_named_sibling();
        while let Some(s) =
            next.filter(|s| s.kind() == "declaration" && !self.text(*s).contains('('))
        {
            next = s.next_named_sibling();
        }
        if let Some(body) = next.filter(|b| b.kind() == "compound_statement") {
            let test = self.in_test();
            let sig = self.signature(n);
            let idx = self.facts.defs.len() as u32;
            self.facts.defs.push(Def {
                name,
                kind: Kind::Function,
                container,
                line: n.start_position().row as u32 + 1,
                end: body.end_position().row as u32 + 1,
                sig: sig.trim_end_matches(';').to_string(),
                test,
                params: self.params(n),
                receiver: None,
            });
            // The scope ends when the block does.
            self.scopes.push(Scope {
                node: body.id(),
                def: Some(idx),
                container: None,
                methods: false,
            });
            return;
        }
        self.push_def(n, name, Kind::Prototype, container, self.in_test());
    }

    /// Whether a definition is test code: in a test file or test module,
    /// marked as a test (`#[test]`, `#[cfg(test)]`), or named as one
    /// (`test_x`, `TestX` in Go and Python).
    fn test_mark(&self, n: Node, name: &str, kind: Kind) -> bool {
        if self.in_test() {
            return true;
        }
        if self.lang == Lang::Rust {
            // `#[test]`, `#[tokio::test]`, `#[cfg(test)]`, `#[rstest]`,
            // `#[test_case(…)]` — not `#[cfg(not(test))]`, not a doc
            // comment that says "latest".
            let mut prev = n.prev_named_sibling();
            while let Some(p) = prev {
                match p.kind() {
                    "attribute_item" => {
                        let t: String = self
                            .text(p)
                            .chars()
                            .filter(|c| !c.is_whitespace())
                            .collect();
                        let inner = t.trim_start_matches("#[").trim_end_matches(']');
                        let path = inner.split('(').next().unwrap_or("");
                        let last = path.rsplit("::").next().unwrap_or(path);
                        if inner == "cfg(test)"
                            || matches!(
                                last,
                                "test" | "rstest" | "test_case" | "quickcheck" | "proptest"
                            )
                        {
                            return true;
                        }
                    }
                    "line_comment" | "block_comment" => {}
                    _ => break,
                }
                prev = p.prev_named_sibling();
            }
            return kind == Kind::Module && name == "tests";
        }
        match self.lang {
            Lang::Python => {
                name.starts_with("test_") || (kind == Kind::Class && name.starts_with("Test"))
            }
            _ => false,
        }
    }

    fn push_def(
        &mut self,
        n: Node,
        name: String,
        kind: Kind,
        container: Option<String>,
        test: bool,
    ) {
        let sig = self.signature(n);
        let params = if kind.runs() {
            self.params(n)
        } else {
            Vec::new()
        };
        let idx = self.facts.defs.len() as u32;
        self.facts.defs.push(Def {
            name: name.clone(),
            kind,
            container,
            line: n.start_position().row as u32 + 1,
            end: last_line(n),
            sig,
            test,
            params,
            receiver: None,
        });
        let holds = matches!(kind, Kind::Class | Kind::Type | Kind::Module);
        self.scopes.push(Scope {
            node: n.id(),
            def: Some(idx),
            container: holds.then_some(name),
            methods: matches!(kind, Kind::Class | Kind::Type),
        });
    }

    /// The names a function's parameters bind: the plain identifiers of
    /// its parameter list (its own, or its declarator's in C, or the
    /// function value's in `const f = (a) => …`).
    fn params(&self, n: Node) -> Vec<String> {
        let list = n
            .child_by_field_name("parameters")
            .or_else(|| {
                let v = n.child_by_field_name("value")?;
                v.child_by_field_name("parameters")
                    .or_else(|| v.child_by_field_name("parameter"))
            })
            .or_else(|| {
                let mut d = n.child_by_field_name("declarator");
                while let Some(x) = d {
                    if let Some(p) = x.child_by_field_name("parameters") {
                        return Some(p);
                    }
                    d = x.child_by_field_name("declarator");
                }
                None
            });
        let Some(list) = list else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut c = list.walk();
        let mut stack = vec![list];
        while let Some(x) = stack.pop() {
            if x.kind() == "identifier" {
                out.push(self.text(x).to_string());
                continue;
            }
            // Default values and types are not names the function binds.
            if matches!(x.kind(), "default_parameter" | "typed_default_parameter") {
                if let Some(name) = x.child_by_field_name("name") {
                    stack.push(name);
                }
                continue;
            }
            stack.extend(x.named_children(&mut c).filter(|k| {
                !k.kind().contains("type") && k.kind() != "assignment_pattern"
                    || k.kind() == "typed_parameter"
            }));
        }
        out.sort();
        out.dedup();
        out
    }

    /// The header of a definition: its text up to its body, whitespace
    /// collapsed, at most 240 characters.
    fn signature(&self, n: Node) -> String {
        let body = n
            .child_by_field_name("body")
            .or_else(|| n.child_by_field_name("value"))
            .map(|b| b.start_byte())
            .unwrap_or(n.end_byte());
        let head = self
            .parsed
            .get(n.start_byte()..body.max(n.start_byte()))
            .unwrap_or_default();
        let head = String::from_utf8_lossy(head);
        let flat = head.split_whitespace().collect::<Vec<_>>().join(" ");
        let flat = flat.trim_end_matches(['{', ':', '=', ' ']).to_string();
        // Saved to disk and shown to models: a key written as a default
        // value (`def connect(token="sk-…")`) does not go with it.
        crate::text::clip::clip(&crate::text::redact::redact(&flat), 240)
    }
}

/// The last line a node covers, 1-based: a node that ends with its
/// newline (a `#define`) ends on the line before.
fn last_line(n: Node) -> u32 {
    let end = n.end_position();
    let row = if end.column == 0 && end.row > n.start_position().row {
        end.row - 1
    } else {
        end.row
    };
    row as u32 + 1
}

/// A type's name without its generics, references or pointer marks
/// (`Vec<T>` → `Vec`, `*Client` → `Client`, `&'a mut Foo` → `Foo`).
fn bare_type(t: &str) -> String {
    let t = t.split('<').next().unwrap_or(t);
    let t = t.rsplit("::").next().unwrap_or(t);
    t.trim_matches(|c: char| !c.is_alphanumeric() && c != '_')
        .rsplit(|c: char| c.is_whitespace() || c == '&' || c == '*')
        .next()
        .unwrap_or(t)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(f: &Facts) -> Vec<String> {
        f.defs
            .iter()
            .map(|d| match &d.container {
                Some(c) => format!("{} {c}.{}", d.kind.name(), d.name),
                None => format!("{} {}", d.kind.name(), d.name),
            })
            .collect()
    }

    fn calls_in(f: &Facts, def: &str) -> Vec<String> {
        let i = f.defs.iter().position(|d| d.name == def).unwrap() as u32;
        f.refs
            .iter()
            .filter(|r| r.call && r.within == Some(i))
            .map(|r| r.name.clone())
            .collect()
    }

    fn extract_plain(lang: Lang, path: &str, src: &[u8]) -> Facts {
        extract(lang, path, src, &Macros::default())
    }

    #[test]
    fn c_declarations_behind_macros_are_found() {
        let mut m = Macros::default();
        m.scan("#define ZEXPORT\n#define local static\n#define OF(a) a\n");
        let src = b"local int gz_fetch OF((gz_statep));\nchar * ZEXPORT gzgets(file, len)\n    gzFile file;\n    int len;\n{\n    if (gz_fetch(state) == -1) return 0;\n}\n";
        let plain = extract_plain(Lang::C, "gzread.c", src);
        // Without the macros, `OF` looks like the name being declared.
        assert_eq!(plain.defs[0].name, "OF");
        let f = extract(Lang::C, "gzread.c", src, &m);
        let n = names(&f);
        assert_eq!(n, ["prototype gz_fetch", "function gzgets"]);
        assert_eq!(calls_in(&f, "gzgets"), ["gz_fetch"]);
        // The signature as parsed: the macro blanked.
        assert_eq!(f.defs[1].sig, "char * gzgets(file, len) gzFile file");
        assert_eq!((f.defs[1].line, f.defs[1].end), (2, 7));
    }

    #[test]
    fn rust_functions_methods_types_calls_and_tests() {
        let src = br#"
use crate::parse::Error;
pub struct Version { major: u64 }
impl Version {
    /// Parses.
    pub fn parse(s: &str) -> Result<Version, Error> {
        let v = parse_major(s)?;
        Ok(Version::new(v))
    }
    fn new(major: u64) -> Self { Version { major } }
}
fn parse_major(s: &str) -> Result<u64, Error> { s.parse().map_err(|_| error!()) }
#[cfg(test)]
mod tests {
    #[test]
    fn parses() { assert_eq!(super::Version::parse("1").major, parse_major("1").unwrap()); }
}
"#;
        let f = extract_plain(Lang::Rust, "src/version.rs", src);
        assert_eq!(
            names(&f),
            [
                "class Version",
                "method Version.parse",
                "method Version.new",
                "function parse_major",
                "module tests",
                "function tests.parses"
            ]
        );
        assert_eq!(calls_in(&f, "parse"), ["parse_major", "Ok", "new"]);
        assert_eq!(calls_in(&f, "parse_major"), ["map_err", "parse", "error"]);
        // Calls inside a macro's arguments are calls, with their qualifier.
        let in_test: Vec<_> = f
            .refs
            .iter()
            .filter(|r| r.call && r.within == Some(5))
            .map(|r| (r.name.as_str(), r.qual.as_deref()))
            .collect();
        assert_eq!(
            in_test,
            [
                ("assert_eq", None),
                ("parse", Some("Version")),
                ("parse_major", None),
                ("unwrap", None)
            ]
        );
        let new = f.refs.iter().find(|r| r.name == "new").unwrap();
        assert_eq!(new.qual.as_deref(), Some("Version"));
        assert!(f.defs[5].test && f.defs[4].test && !f.defs[1].test);
        assert_eq!(f.imports, ["use crate::parse::Error;"]);
        assert_eq!(f.defs[1].line, 6);
        assert_eq!(f.defs[1].end, 9);
        assert_eq!(
            f.defs[1].sig,
            "pub fn parse(s: &str) -> Result<Version, Error>"
        );
        // `Error` in the signature is a mention of the type by `parse`.
        assert!(
            f.refs
                .iter()
                .any(|r| r.name == "Error" && !r.call && r.within == Some(1))
        );
        assert!(!f.partial);
    }

    #[test]
    fn python_classes_methods_and_test_names() {
        let src = b"import os\nfrom .utils import to_key\n\nclass Session:\n    def send(self, req):\n        return self.adapter(req).send(to_key(req))\n\n    @property\n    def adapter(self):\n        return get_adapter()\n\ndef test_send():\n    Session().send(1)\n";
        let f = extract_plain(Lang::Python, "requests/sessions.py", src);
        assert_eq!(
            names(&f),
            [
                "class Session",
                "method Session.send",
                "method Session.adapter",
                "function test_send"
            ]
        );
        assert_eq!(calls_in(&f, "send"), ["send", "adapter", "to_key"]);
        assert!(f.defs[3].test && !f.defs[1].test);
        assert_eq!(f.imports.len(), 2);
    }

    #[test]
    fn javascript_prototype_methods_arrows_and_string_named_tests() {
        let src = b"var Router = require('./router');\nfunction createApp() { return mixin(app); }\napp.handle = function handle(req) { this.router.handle(req); };\nRouter.prototype.use = function (fn) { flatten(fn); };\nconst flatten = (a) => a.flat();\ndescribe('app', function () {\n  it('handles', function () { createApp().handle(1); });\n});\n";
        let f = extract_plain(Lang::JavaScript, "lib/application.js", src);
        assert_eq!(
            names(&f),
            [
                "const Router",
                "function createApp",
                "method app.handle",
                "method Router.use",
                "function flatten",
                "test app",
                "test handles"
            ]
        );
        assert_eq!(calls_in(&f, "handles"), ["handle", "createApp"]);
        assert!(f.defs[5].test);
    }

    #[test]
    fn typescript_interfaces_and_classes() {
        let src = b"import { z } from './z';\nexport interface Opts { a: number }\nexport class Parser { parse(o: Opts): number { return check(o); } }\nexport function check(o: Opts) { return o.a; }\n";
        let f = extract_plain(Lang::TypeScript, "src/p.ts", src);
        assert_eq!(
            names(&f),
            [
                "type Opts",
                "class Parser",
                "method Parser.parse",
                "function check"
            ]
        );
        assert_eq!(calls_in(&f, "parse"), ["check"]);
    }

    #[test]
    fn go_functions_methods_with_receivers_and_types() {
        let src = b"package assert\nimport \"fmt\"\ntype Assertions struct { t T }\nfunc (a *Assertions) Equal(x, y int) bool { return Equal(a.t, x, y) }\nfunc Equal(t T, x, y int) bool { return ObjectsAreEqual(x, y) || Fail(t, fmt.Sprintf(\"%d\", x)) }\n";
        let f = extract_plain(Lang::Go, "assert/assertions.go", src);
        assert_eq!(
            names(&f),
            [
                "class Assertions",
                "method Assertions.Equal",
                "function Equal"
            ]
        );
        assert_eq!(calls_in(&f, "Equal")[..1], ["Equal"]);
        let in_fn: Vec<_> = f
            .refs
            .iter()
            .filter(|r| r.call && r.within == Some(2))
            .map(|r| r.name.as_str())
            .collect();
        assert_eq!(in_fn, ["ObjectsAreEqual", "Fail", "Sprintf"]);
        assert_eq!(f.imports, ["\"fmt\""]);
    }

    #[test]
    fn c_definitions_prototypes_structs_and_macros() {
        let src = b"#include \"zutil.h\"\n#define MAX(a,b) ((a)>(b)?(a):(b))\nstruct state { int w; };\ntypedef struct state state_t;\nint ZEXPORT deflate(z_streamp strm, int flush);\nlocal void fill_window(deflate_state *s) { int n = read_buf(s->strm, s->window, MAX(1, 2)); }\nint ZEXPORT deflate(z_streamp strm, int flush) { fill_window(strm->state); return Z_OK; }\n";
        let f = extract_plain(Lang::C, "deflate.c", src);
        let n = names(&f);
        assert!(n.contains(&"macro MAX".to_string()), "{n:?}");
        assert!(n.contains(&"class state".to_string()), "{n:?}");
        assert!(n.contains(&"type state_t".to_string()), "{n:?}");
        assert!(n.contains(&"function fill_window".to_string()), "{n:?}");
        assert!(n.contains(&"function deflate".to_string()), "{n:?}");
        assert!(calls_in(&f, "fill_window").contains(&"read_buf".to_string()));
        assert_eq!(f.imports, ["#include \"zutil.h\""]);
    }

    #[test]
    fn cpp_qualified_methods_and_classes() {
        let src = b"namespace fmt {\nclass Writer { public: void write(int x); };\nvoid Writer::write(int x) { flush(); }\n}\n";
        let f = extract_plain(Lang::Cpp, "src/writer.cc", src);
        let n = names(&f);
        assert!(n.contains(&"class fmt.Writer".to_string()), "{n:?}");
        assert!(n.contains(&"prototype Writer.write".to_string()), "{n:?}");
        assert!(n.contains(&"method Writer.write".to_string()), "{n:?}");
    }

    #[test]
    fn a_file_that_does_not_parse_keeps_what_parsed() {
        let f = extract_plain(
            Lang::Rust,
            "src/a.rs",
            b"fn good() { other(); }\nfn broken( {{{ \n",
        );
        assert!(f.partial);
        assert_eq!(f.defs[0].name, "good");
    }

    #[test]
    fn constants_overloads_decorators_params_and_nested_functions() {
        let src = b"import typing\nWIN = sys.platform == 'win32'\n\nclass Ctx:\n    @typing.overload\n    def invoke(self, cb: int) -> int: ...\n    @contextmanager\n    def invoke(self, cb, *args, key=DEFAULT):\n        def inner():\n            return cb()\n        return inner()\n";
        let f = extract_plain(Lang::Python, "click/core.py", src);
        assert_eq!(
            names(&f),
            [
                "const WIN",
                "class Ctx",
                "prototype Ctx.invoke",
                "method Ctx.invoke",
                "function inner"
            ]
        );
        // The decorator is part of the definition.
        assert_eq!((f.defs[3].line, f.defs[3].end), (7, 11));
        assert_eq!(f.defs[3].params, ["args", "cb", "key", "self"]);
        let ts = b"export const schema = z.object({ a: z.string() });\nexport function parse(x: string): number;\nexport function parse(x: any) { return check(x); }\n";
        let f = extract_plain(Lang::TypeScript, "src/a.ts", ts);
        assert_eq!(
            names(&f),
            ["const schema", "prototype parse", "function parse"]
        );
        // The calls that build a constant are its calls.
        assert_eq!(calls_in(&f, "schema"), ["object", "string"]);
        let rs = b"mod inner { pub fn in_mod() {} }\nfn outer(f: impl Fn()) { f() }\n";
        let f = extract_plain(Lang::Rust, "src/lib.rs", rs);
        assert_eq!(
            names(&f),
            ["module inner", "function inner.in_mod", "function outer"]
        );
        assert_eq!(f.defs[2].params, ["f"]);
    }

    #[test]
    fn only_test_attributes_make_rust_test_code() {
        let src = b"/// Keeps the latest, tested elsewhere.\n#[cfg(not(test))]\nfn prod() {}\n#[tokio::test]\nasync fn t1() {}\n#[test_case(1)]\nfn t2(x: u8) {}\n#define X 1\n";
        let f = extract_plain(Lang::Rust, "src/a.rs", src);
        let tests: Vec<_> = f.defs.iter().map(|d| (d.name.as_str(), d.test)).collect();
        assert_eq!(tests, [("prod", false), ("t1", true), ("t2", true)]);
        let c = extract_plain(Lang::C, "a.h", b"#define ONE 1\nint two(void);\n");
        assert_eq!((c.defs[0].line, c.defs[0].end), (1, 1));
    }

    #[test]
    fn a_key_in_a_signature_is_not_kept() {
        let f = extract_plain(
            Lang::Python,
            "client.py",
            b"def connect(token=\"sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789\"):\n    return token\n",
        );
        assert!(!f.defs[0].sig.contains("AbCdEfGh"), "{}", f.defs[0].sig);
    }

    #[test]
    fn test_paths_by_convention() {
        for p in [
            "tests/api.rs",
            "test_models.py",
            "assert/assertions_test.go",
            "src/a.test.ts",
            "lib/__tests__/x.js",
            "src/x.spec.js",
        ] {
            assert!(test_path(p), "{p}");
        }
        for p in [
            "src/lib.rs",
            "requests/models.py",
            "lib/router/index.js",
            "contest.py",
        ] {
            assert!(!test_path(p), "{p}");
        }
    }

    #[test]
    fn bare_types() {
        assert_eq!(bare_type("Vec<T>"), "Vec");
        assert_eq!(bare_type("*Client"), "Client");
        assert_eq!(bare_type("&'a mut Foo"), "Foo");
        assert_eq!(bare_type("crate::a::Foo<u8>"), "Foo");
    }
}
