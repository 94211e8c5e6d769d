//! The index as a graph: definitions by name, and every use of a name
//! resolved to the definitions it can mean.
//!
//! Resolution is by name and scope, not by type: a use is *resolved* when
//! one definition is left after the rules below, and *name-matched* when
//! several namesakes remain (each is then an edge, marked as such). The
//! rules, in order, each applied only if it leaves at least one candidate:
//! 1. a call reached through a qualifier keeps the definitions of that
//!    type or module (`Version::new`, `utils.to_key()`), or through
//!    `self`/`this` those of the caller's own type; a bare call keeps
//!    free functions and the caller's own methods;
//! 2. a definition with a body wins over its prototype (C's header);
//! 3. one in the same file wins;
//! 4. Go: one in the same package (folder) wins;
//! 5. one in a module the file imports wins (by file or folder name).

use std::collections::HashMap;

use super::Index;
use super::extract::{Def, Ref, SELF};
use super::lang::{Kind, Lang};

/// A definition: its file's position in [`Graph::files`] and its index
/// in that file's definitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct DefId {
    pub file: u32,
    pub def: u32,
}

/// How sure an edge is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Certainty {
    Resolved,
    /// Only the name matched: one of this many namesakes.
    NameMatched(usize),
}

impl Certainty {
    pub(crate) fn label(self) -> String {
        match self {
            Certainty::Resolved => "resolved".into(),
            Certainty::NameMatched(n) => format!("name-matched, 1 of {n}"),
        }
    }
}

/// What a use means: the definitions it may name, and how sure that is.
type Resolution = (Vec<DefId>, Certainty);

/// A use of a definition: where, by which definition (none at the top
/// level of a file), and how sure.
#[derive(Clone, Debug)]
pub(crate) struct Use {
    pub file: u32,
    pub within: Option<u32>,
    pub line: u32,
    pub call: bool,
    pub certainty: Certainty,
}

pub(crate) struct Graph<'a> {
    pub files: Vec<(&'a str, &'a super::Entry)>,
    /// Per file, the modules its imports name, as paths without extension
    /// (`requests/utils`, `lib/router/index`), relative ones resolved.
    imported: Vec<Vec<String>>,
    by_name: HashMap<&'a str, Vec<DefId>>,
    /// Every use of a name: its file and its index in the file's refs.
    uses: HashMap<&'a str, Vec<(u32, u32)>>,
    /// Uses already resolved in this graph's life (one answer): `impact`
    /// walks the same names level after level.
    memo: std::cell::RefCell<HashMap<(u32, u32), Resolution>>,
}

impl<'a> Graph<'a> {
    pub(crate) fn new(ix: &'a Index) -> Graph<'a> {
        let files: Vec<_> = ix.files.iter().map(|(k, e)| (k.as_str(), e)).collect();
        let mut by_name: HashMap<&str, Vec<DefId>> = HashMap::new();
        let mut uses: HashMap<&str, Vec<(u32, u32)>> = HashMap::new();
        for (fi, (_, e)) in files.iter().enumerate() {
            for (di, d) in e.facts.defs.iter().enumerate() {
                by_name.entry(d.name.as_str()).or_default().push(DefId {
                    file: fi as u32,
                    def: di as u32,
                });
            }
            for (ri, r) in e.facts.refs.iter().enumerate() {
                uses.entry(r.name.as_str())
                    .or_default()
                    .push((fi as u32, ri as u32));
            }
        }
        let imported = files
            .iter()
            .map(|(p, e)| {
                e.facts
                    .imports
                    .iter()
                    .flat_map(|i| modules_of(e.lang, p, i))
                    .collect()
            })
            .collect();
        Graph {
            files,
            imported,
            by_name,
            uses,
            memo: Default::default(),
        }
    }

    pub(crate) fn def(&self, id: DefId) -> &'a Def {
        &self.files[id.file as usize].1.facts.defs[id.def as usize]
    }

    pub(crate) fn path(&self, id: DefId) -> &'a str {
        self.files[id.file as usize].0
    }

    fn lang(&self, file: u32) -> Lang {
        self.files[file as usize].1.lang
    }

    /// Every definition, in path order.
    pub(crate) fn all(&self) -> impl Iterator<Item = DefId> + '_ {
        self.files.iter().enumerate().flat_map(|(fi, (_, e))| {
            (0..e.facts.defs.len()).map(move |di| DefId {
                file: fi as u32,
                def: di as u32,
            })
        })
    }

    /// Definitions named `name`.
    pub(crate) fn named(&self, name: &str) -> &[DefId] {
        self.by_name.get(name).map_or(&[], |v| v.as_slice())
    }

    /// What a use in `file` can mean, and how sure that is. Empty when the
    /// name is defined nowhere in the index (a library, a builtin), or
    /// names a parameter of the calling function.
    pub(crate) fn resolve(&self, file: u32, r: &Ref) -> (Vec<DefId>, Certainty) {
        let (path, entry) = self.files[file as usize];
        let caller = r.within.map(|w| &entry.facts.defs[w as usize]);
        // `f(x)` with `f` a parameter calls whatever was passed.
        if r.call && r.qual.is_none() && caller.is_some_and(|d| d.params.contains(&r.name)) {
            return (Vec::new(), Certainty::Resolved);
        }
        let family = entry.lang.family();
        // Code that is not a test cannot call test code.
        let from_test = caller.is_some_and(|d| d.test) || super::extract::test_path(path);
        let own = caller.and_then(|d| d.container.as_deref());
        // A bare call is never a method's, but in C++ (`this->` implied)
        // one of the caller's own type.
        let bare_method_ok = |d: &Def| {
            entry.lang == Lang::Cpp && d.container.is_some() && d.container.as_deref() == own
        };
        let all: Vec<DefId> = self
            .named(&r.name)
            .iter()
            .copied()
            .filter(|id| !r.call || callable(self.def(*id).kind))
            .filter(|id| self.def(*id).kind != Kind::Test)
            .filter(|id| self.lang(id.file).family() == family)
            .filter(|id| from_test || !self.is_test(*id))
            .filter(|id| {
                let d = self.def(*id);
                !(r.call && r.qual.is_none() && d.kind == Kind::Method && !bare_method_ok(d))
            })
            .collect();
        if all.is_empty() {
            return (all, Certainty::Resolved);
        }
        let mut c = all.clone();
        let narrow = |c: &mut Vec<DefId>, keep: &dyn Fn(&DefId) -> bool| -> bool {
            let kept: Vec<DefId> = c.iter().copied().filter(|id| keep(id)).collect();
            let any = !kept.is_empty();
            if any {
                *c = kept;
            }
            any
        };
        // 1. What the call was reached through. A qualifier that names
        // none of the candidates' types or modules (`v.push(1)` with `v` a
        // local) leaves the edge name-matched, however few namesakes.
        // A qualifier names a module (a file or folder) only when it is a
        // path (`parse::x`) or the file imports it (`import config`): a
        // local variable `config` is not `config.py`.
        let imports_q = |q: &str| entry.facts.imports.iter().any(|i| mentions(i, q));
        let this = caller.and_then(|d| d.receiver.as_deref());
        let identified = match r.qual.as_deref() {
            // `super().save()`: a parent's, which the index does not know.
            Some("super") => {
                narrow(&mut c, &|id| {
                    let d = self.def(*id);
                    d.container.is_some() && d.container.as_deref() != own
                });
                false
            }
            Some(q) if SELF.contains(&q) || this == Some(q) => narrow(&mut c, &|id| {
                let d = self.def(*id);
                d.container.is_some() && d.container.as_deref() == own
            }),
            Some(q) => {
                let module = r.path || imports_q(q);
                let named = narrow(&mut c, &|id| {
                    let (d, p) = (self.def(*id), self.path(*id));
                    d.container.as_deref() == Some(q)
                        || (module && (stem(p) == q || parent(p).rsplit('/').next() == Some(q)))
                });
                if !named && r.call {
                    // `obj.parse()`: whatever `obj` is, not a free function.
                    narrow(&mut c, &|id| self.def(*id).container.is_some());
                }
                named
            }
            None => true,
        };
        // 2. A body over a prototype.
        narrow(&mut c, &|id| self.def(*id).kind != Kind::Prototype);
        // 3. The same file.
        if c.len() > 1 {
            narrow(&mut c, &|id| id.file == file);
        }
        // 4. Go: the same package.
        if c.len() > 1 && entry.lang == Lang::Go {
            let dir = parent(path);
            narrow(&mut c, &|id| parent(self.path(*id)) == dir);
        }
        // 5. A module the file imports: by the path the import names, then
        // by file or folder name.
        if c.len() > 1 {
            let modules = &self.imported[file as usize];
            narrow(&mut c, &|id| {
                modules.iter().any(|m| module_is(self.path(*id), m))
            });
        }
        if c.len() > 1 {
            let imports = &entry.facts.imports;
            narrow(&mut c, &|id| {
                let p = self.path(*id);
                let (s, d) = (stem(p), parent(p).rsplit('/').next().unwrap_or(""));
                imports
                    .iter()
                    .any(|i| mentions(i, s) || (!d.is_empty() && mentions(i, d)))
            });
        }
        if c.len() == 1 && identified {
            (c, Certainty::Resolved)
        } else {
            // Namesakes: a declaration and its definition are one.
            let bodies = all
                .iter()
                .filter(|id| self.def(**id).kind != Kind::Prototype)
                .count();
            let n = if bodies > 0 { bodies } else { all.len() }.max(c.len());
            (c, Certainty::NameMatched(n))
        }
    }

    /// [`Graph::resolve`] of the `ri`th use of file `fi`, remembered.
    fn resolved(&self, fi: u32, ri: u32) -> (Vec<DefId>, Certainty) {
        if let Some(hit) = self.memo.borrow().get(&(fi, ri)) {
            return hit.clone();
        }
        let r = &self.files[fi as usize].1.facts.refs[ri as usize];
        let out = self.resolve(fi, r);
        self.memo.borrow_mut().insert((fi, ri), out.clone());
        out
    }

    /// The uses of a definition: calls and other mentions, in path and
    /// line order. Its own name at its definition is not a use.
    pub(crate) fn uses_of(&self, target: DefId) -> Vec<Use> {
        let d = self.def(target);
        let mut out = Vec::new();
        for &(fi, ri) in self.uses.get(d.name.as_str()).map_or(&[][..], |v| v) {
            let r = &self.files[fi as usize].1.facts.refs[ri as usize];
            if fi == target.file && r.within == Some(target.def) && !r.call {
                continue;
            }
            let (to, certainty) = self.resolved(fi, ri);
            if to.contains(&target) {
                out.push(Use {
                    file: fi,
                    within: r.within,
                    line: r.line,
                    call: r.call,
                    certainty,
                });
            }
        }
        out
    }

    /// The calls a definition makes: each callee's name, line and what it
    /// resolves to (nothing for a library or builtin).
    pub(crate) fn calls_of(&self, id: DefId) -> Vec<(&'a Ref, Vec<DefId>, Certainty)> {
        let facts = &self.files[id.file as usize].1.facts;
        // A use inside a nested definition (a closure named by the
        // grammar, an inner function) is the outer one's too.
        let inner: Vec<u32> = (0..facts.defs.len() as u32)
            .filter(|&i| {
                let (o, d) = (&facts.defs[id.def as usize], &facts.defs[i as usize]);
                i == id.def || (d.line >= o.line && d.end <= o.end && i > id.def)
            })
            .collect();
        facts
            .refs
            .iter()
            .filter(|r| r.call && r.within.is_some_and(|w| inner.contains(&w)))
            .map(|r| {
                let (to, c) = self.resolve(id.file, r);
                (r, to, c)
            })
            .collect()
    }

    /// Whether a definition is test code.
    pub(crate) fn is_test(&self, id: DefId) -> bool {
        self.def(id).test || super::extract::test_path(self.path(id))
    }
}

/// Kinds a call can land on (a class: its constructor).
fn callable(k: Kind) -> bool {
    matches!(
        k,
        Kind::Function | Kind::Method | Kind::Prototype | Kind::Macro | Kind::Class | Kind::Type
    )
}

/// A file's name without folder and extension (`requests/utils.py` →
/// `utils`).
fn stem(p: &str) -> &str {
    let f = p.rsplit('/').next().unwrap_or(p);
    f.split('.').next().unwrap_or(f)
}

fn parent(p: &str) -> &str {
    p.rsplit_once('/').map_or("", |(d, _)| d)
}

/// The modules one import names, as paths without extension: relative
/// ones (`./router`, `from .utils import x`, `use super::parse`) resolved
/// against the importing file, absolute ones left to match as a suffix.
fn modules_of(lang: Lang, file: &str, import: &str) -> Vec<String> {
    let dir = parent(file);
    let mut out = Vec::new();
    let quoted = || {
        import
            .split(['"', '\'', '`'])
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    match lang {
        Lang::Python => {
            let text = import.trim();
            let (module, names) = match text.strip_prefix("from ") {
                Some(rest) => match rest.split_once(" import ") {
                    Some((m, n)) => (m.trim(), n),
                    None => (rest.trim(), ""),
                },
                None => (text.trim_start_matches("import ").trim(), ""),
            };
            for module in module.split(',') {
                let module = module.split(" as ").next().unwrap_or("").trim();
                let dots = module.chars().take_while(|c| *c == '.').count();
                let rest = module[dots..].replace('.', "/");
                let base = if dots == 0 {
                    String::new()
                } else {
                    let mut b = dir.to_string();
                    for _ in 1..dots {
                        b = parent(&b).to_string();
                    }
                    b
                };
                let m = join(&base, &rest);
                // `from . import utils`, `from pkg import module`.
                for n in names.split(',') {
                    let n = n.split(" as ").next().unwrap_or("");
                    let n = n.trim_matches(|c: char| !c.is_alphanumeric() && c != '_');
                    if !n.is_empty() {
                        out.push(join(&m, n));
                    }
                }
                if !m.is_empty() {
                    out.push(m);
                }
            }
        }
        Lang::Rust => {
            let path = import
                .trim_start_matches("pub ")
                .trim_start_matches("use ")
                .split(['{', ';', ' '])
                .next()
                .unwrap_or("");
            let mut segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
            let mut base = String::new();
            match segs.first().copied() {
                Some("crate") => {
                    segs.remove(0);
                }
                Some("self") => {
                    segs.remove(0);
                    base = dir.to_string();
                }
                Some("super") => {
                    base = dir.to_string();
                    while segs.first() == Some(&"super") {
                        segs.remove(0);
                        base = parent(&base).to_string();
                    }
                }
                _ => {}
            }
            // `a::b::Item` names module `a/b`; `a::b` may be one too.
            for k in [segs.len().saturating_sub(1), segs.len()] {
                let m = join(&base, &segs[..k].join("/"));
                if !m.is_empty() {
                    out.push(m);
                }
            }
        }
        _ => {
            for spec in quoted() {
                let spec = spec.trim();
                let m = if spec.starts_with("./") || spec.starts_with("../") {
                    normalize(&join(dir, spec))
                } else {
                    spec.to_string()
                };
                out.push(strip_ext(&m).to_string());
            }
        }
    }
    out.retain(|m| !m.is_empty() && m != ".");
    out
}

/// Whether the file at `path` is the module `m` (or in the package `m`).
fn module_is(path: &str, m: &str) -> bool {
    let p = strip_ext(path);
    let p = p
        .strip_suffix("/index")
        .or_else(|| p.strip_suffix("/__init__"))
        .or_else(|| p.strip_suffix("/mod"))
        .unwrap_or(p);
    let is = |x: &str| x == m || x.ends_with(&format!("/{m}"));
    // Go: `github.com/stretchr/testify/assert` is the folder `assert` of a
    // repository whose root is the module's.
    let dir = parent(path);
    is(p) || is(dir) || (!dir.is_empty() && m.ends_with(&format!("/{dir}")))
}

fn strip_ext(p: &str) -> &str {
    let file = p.rsplit('/').next().unwrap_or(p);
    match file.rsplit_once('.') {
        Some((_, ext)) if ext.len() <= 4 && !file.starts_with('.') => &p[..p.len() - ext.len() - 1],
        _ => p,
    }
}

fn join(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}/{b}"),
    }
}

/// `a/./b/../c` → `a/c`.
fn normalize(p: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            s => out.push(s),
        }
    }
    out.join("/")
}

/// Whether `word` occurs in `text` as a whole identifier.
fn mentions(text: &str, word: &str) -> bool {
    !word.is_empty()
        && text.match_indices(word).any(|(i, _)| {
            let ok = |c: Option<char>| !c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            ok(text[..i].chars().next_back()) && ok(text[i + word.len()..].chars().next())
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code_index::{Index, Limits};
    use std::sync::atomic::AtomicBool;

    fn index(files: &[(&str, &str)]) -> (tempfile::TempDir, Index) {
        let d = crate::code_index::tree(files);
        let root = d.path().canonicalize().unwrap();
        let ix = Index::build(&root, Limits::default(), &AtomicBool::new(false));
        (d, ix)
    }

    fn id(g: &Graph, name: &str, path: &str) -> DefId {
        *g.named(name)
            .iter()
            .find(|i| g.path(**i) == path)
            .unwrap_or_else(|| panic!("{name} in {path}"))
    }

    fn callers(g: &Graph, t: DefId) -> Vec<(String, String)> {
        g.uses_of(t)
            .iter()
            .filter(|u| u.call)
            .map(|u| {
                let who = u.within.map_or("<top>".into(), |w| {
                    g.def(DefId {
                        file: u.file,
                        def: w,
                    })
                    .name
                    .clone()
                });
                (who, u.certainty.label())
            })
            .collect()
    }

    #[test]
    fn namesakes_are_told_apart_by_receiver_file_and_import() {
        let (_d, ix) = index(&[
            (
                "pkg/models.py",
                "from .utils import to_key\nclass Request:\n    def prepare(self):\n        return self.encode()\n    def encode(self):\n        return to_key(1)\n",
            ),
            (
                "pkg/other.py",
                "class Response:\n    def encode(self):\n        return 2\n",
            ),
            ("pkg/utils.py", "def to_key(x):\n    return x\n"),
            ("pkg/more.py", "def to_key(x):\n    return x\n"),
            (
                "pkg/test_models.py",
                "from pkg.models import Request\ndef test_prepare():\n    Request().prepare()\n    r.encode()\n",
            ),
        ]);
        let g = Graph::new(&ix);
        let enc = id(&g, "encode", "pkg/models.py");
        assert_eq!(
            callers(&g, enc),
            [
                ("prepare".to_string(), "resolved".to_string()),
                (
                    "test_prepare".to_string(),
                    "name-matched, 1 of 2".to_string()
                )
            ]
        );
        let key = id(&g, "to_key", "pkg/utils.py");
        assert_eq!(callers(&g, key), [("encode".into(), "resolved".into())]);
        assert!(callers(&g, id(&g, "to_key", "pkg/more.py")).is_empty());
        let calls: Vec<_> = g
            .calls_of(id(&g, "prepare", "pkg/models.py"))
            .iter()
            .map(|(r, to, c)| (r.name.clone(), to.len(), *c))
            .collect();
        assert_eq!(calls, [("encode".to_string(), 1, Certainty::Resolved)]);
        assert!(g.is_test(id(&g, "test_prepare", "pkg/test_models.py")));
    }

    #[test]
    fn a_c_definition_wins_over_its_prototype_and_go_stays_in_its_package() {
        let (_d, ix) = index(&[
            ("zlib.h", "int deflate(int x);\n"),
            (
                "deflate.c",
                "#include \"zlib.h\"\nint deflate(int x) { return x; }\n",
            ),
            (
                "example.c",
                "#include \"zlib.h\"\nint main() { return deflate(1); }\n",
            ),
            (
                "a/a.go",
                "package a\nfunc Fail() {}\nfunc Equal() { Fail() }\n",
            ),
            ("b/b.go", "package b\nfunc Fail() {}\n"),
        ]);
        let g = Graph::new(&ix);
        assert_eq!(
            callers(&g, id(&g, "deflate", "deflate.c")),
            [("main".into(), "resolved".into())]
        );
        assert_eq!(
            callers(&g, id(&g, "Fail", "a/a.go")),
            [("Equal".into(), "resolved".into())]
        );
        assert!(callers(&g, id(&g, "Fail", "b/b.go")).is_empty());
    }

    #[test]
    fn imports_by_path_parameters_receivers_tests_and_languages() {
        let (_d, ix) = index(&[
            ("py/pkg1/util.py", "def util_fn():\n    return 1\n"),
            ("py/pkg2/util.py", "def util_fn():\n    return 2\n"),
            (
                "py/pkg1/use.py",
                "from .util import util_fn\ndef caller1():\n    return util_fn()\ndef apply(f):\n    return f()\n",
            ),
            ("py/f.py", "def f():\n    return 0\n"),
            ("ts/a.ts", "export function helperA() { return 1; }\n"),
            ("dist/a.js", "function helperA() { return 1; }\n"),
            (
                "ts/use.ts",
                "import { helperA } from \"./a.js\";\nexport function run() { return helperA(); }\nfunction pyOnly2() { return util_fn(); }\n",
            ),
            (
                "rs/src/lib.rs",
                "struct Bag;\nimpl Bag { fn push(&mut self, x: u8) {} }\nfn fill(v: &mut Vec<u8>, b: &mut Bag) { v.push(1); b.push(2); }\n#[cfg(test)]\nmod tests {\n    macro_rules! check { () => {} }\n}\nfn prod() { check!(); }\n",
            ),
        ]);
        let g = Graph::new(&ix);
        assert_eq!(
            callers(&g, id(&g, "util_fn", "py/pkg1/util.py")),
            [("caller1".into(), "resolved".into())]
        );
        assert!(callers(&g, id(&g, "util_fn", "py/pkg2/util.py")).is_empty());
        // `f` is `apply`'s parameter, not py/f.py's function.
        assert!(callers(&g, id(&g, "f", "py/f.py")).is_empty());
        assert_eq!(
            callers(&g, id(&g, "helperA", "ts/a.ts")),
            [("run".into(), "resolved".into())]
        );
        // A JavaScript call never lands in Python.
        let in_ts = g.files.iter().position(|(p, _)| *p == "ts/use.ts").unwrap() as u32;
        let r = g.files[in_ts as usize]
            .1
            .facts
            .refs
            .iter()
            .find(|r| r.name == "util_fn")
            .unwrap();
        assert!(g.resolve(in_ts, r).0.is_empty());
        // `v.push(1)` on a local is not known to be `Bag::push`.
        let push = callers(&g, id(&g, "push", "rs/src/lib.rs"));
        assert_eq!(
            push,
            [
                ("fill".to_string(), "name-matched, 1 of 1".to_string()),
                ("fill".to_string(), "name-matched, 1 of 1".to_string())
            ]
        );
        // Production code does not call a test module's macro.
        assert!(callers(&g, id(&g, "check", "rs/src/lib.rs")).is_empty());
    }

    #[test]
    fn super_receivers_locals_named_like_files_and_cpp_headers() {
        let (_d, ix) = index(&[
            (
                "py/models.py",
                "class Base:\n    def save(self):\n        return 1\nclass Child(Base):\n    def save(self):\n        return super().save() + 1\n",
            ),
            (
                "py/config.py",
                "class Config:\n    def get(self, k):\n        return k\n",
            ),
            (
                "py/app.py",
                "import json\ndef load(path):\n    config = json.load(open(path))\n    return config.get('name')\n",
            ),
            (
                "go/widget.go",
                "package m\ntype Widget struct{}\nfunc (w *Widget) Close() {}\nfunc (w *Widget) Reset() { w.Close() }\n",
            ),
            (
                "go/sub/s.go",
                "package sub\ntype Other struct{}\nfunc (o *Other) Close() {}\nfunc use(widget *Other) { widget.Close() }\nfunc Close() {}\n",
            ),
            (
                "cpp/a.h",
                "namespace n {\nclass Doc {\npublic:\n  int load(int x);\n};\n}\n",
            ),
            (
                "cpp/a.cpp",
                "#include \"a.h\"\n#define PUGI__FN inline\nnamespace n {\nPUGI__FN int Doc::load(int x) { return x; }\n}\n",
            ),
            (
                "cpp/tests/t.cpp",
                "#include \"../a.h\"\nTEST(dom_load) {\n  n::Doc d;\n  d.load(1);\n}\n",
            ),
        ]);
        let g = Graph::new(&ix);
        // `super().save()` is a parent's: never the caller itself, never
        // resolved.
        let base = callers(&g, id(&g, "save", "py/models.py"));
        assert_eq!(
            base,
            [("save".to_string(), "name-matched, 1 of 2".to_string())]
        );
        // `config` is a local, not py/config.py.
        assert_eq!(
            callers(&g, id(&g, "get", "py/config.py")),
            [("load".to_string(), "name-matched, 1 of 1".to_string())]
        );
        // Go: through the receiver is through self; a bare call is not a
        // method's; a parameter named like a file is not that file.
        let close: Vec<DefId> = g.named("Close").to_vec();
        let widget = *close
            .iter()
            .find(|i| g.path(**i) == "go/widget.go")
            .unwrap();
        assert_eq!(
            callers(&g, widget),
            [("Reset".to_string(), "resolved".to_string())]
        );
        let other = *close
            .iter()
            .find(|i| g.path(**i) == "go/sub/s.go" && g.def(**i).kind == Kind::Method)
            .unwrap();
        assert_eq!(
            callers(&g, other),
            [("use".to_string(), "name-matched, 1 of 3".to_string())]
        );
        // A C++ header is read as C++, a source file's own macros are
        // blanked, a test macro names its test.
        let load = g.named("load").to_vec();
        assert!(
            load.iter()
                .any(|i| g.path(*i) == "cpp/a.h" && g.def(*i).kind == Kind::Prototype)
        );
        let body = *load.iter().find(|i| g.path(**i) == "cpp/a.cpp").unwrap();
        assert_eq!(g.def(body).container.as_deref(), Some("Doc"));
        assert_eq!(
            callers(&g, body),
            [("dom_load".to_string(), "name-matched, 1 of 1".to_string())]
        );
    }

    #[test]
    fn import_texts_name_modules_by_path() {
        assert_eq!(
            modules_of(
                Lang::Python,
                "src/requests/models.py",
                "from .utils import to_key, guess"
            ),
            [
                "src/requests/utils/to_key",
                "src/requests/utils/guess",
                "src/requests/utils"
            ]
        );
        assert_eq!(
            modules_of(Lang::Python, "a/b/c.py", "from .. import compat"),
            ["a/compat", "a"]
        );
        assert_eq!(
            modules_of(
                Lang::JavaScript,
                "lib/express.js",
                "var router = require('./router/index.js')"
            ),
            ["lib/router/index"]
        );
        assert_eq!(
            modules_of(Lang::Rust, "src/version.rs", "use crate::parse::Error;"),
            ["parse", "parse/Error"]
        );
        assert_eq!(
            modules_of(Lang::C, "gzread.c", "#include \"gzguts.h\""),
            ["gzguts"]
        );
        assert!(module_is("requests/utils.py", "requests/utils"));
        assert!(module_is("lib/router/index.js", "lib/router"));
        assert!(module_is(
            "assert/assertions.go",
            "github.com/stretchr/testify/assert"
        ));
        assert!(!module_is("ts/sub/a.ts", "ts/a"));
    }

    #[test]
    fn identifiers_match_whole_words() {
        assert!(mentions("use crate::parse::Error;", "parse"));
        assert!(!mentions("use crate::parser;", "parse"));
        assert_eq!(stem("requests/utils.py"), "utils");
    }
}
