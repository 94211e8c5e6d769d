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
    by_name: HashMap<&'a str, Vec<DefId>>,
    /// Every use of a name: its file and its index in the file's refs.
    uses: HashMap<&'a str, Vec<(u32, u32)>>,
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
        Graph {
            files,
            by_name,
            uses,
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
    /// name is defined nowhere in the index (a library, a builtin).
    pub(crate) fn resolve(&self, file: u32, r: &Ref) -> (Vec<DefId>, Certainty) {
        let all: Vec<DefId> = self
            .named(&r.name)
            .iter()
            .copied()
            .filter(|id| !r.call || callable(self.def(*id).kind))
            .filter(|id| self.def(*id).kind != Kind::Test)
            .collect();
        if all.len() <= 1 {
            return (all, Certainty::Resolved);
        }
        let own = r.within.and_then(|w| {
            self.files[file as usize].1.facts.defs[w as usize]
                .container
                .as_deref()
        });
        let mut c = all.clone();
        let narrow = |c: &mut Vec<DefId>, keep: &dyn Fn(&DefId) -> bool| {
            let kept: Vec<DefId> = c.iter().copied().filter(|id| keep(id)).collect();
            if !kept.is_empty() {
                *c = kept;
            }
        };
        // 1. What the call was reached through.
        match r.qual.as_deref() {
            Some(q) if SELF.contains(&q) => narrow(&mut c, &|id| {
                let d = self.def(*id);
                d.container.is_some() && d.container.as_deref() == own
            }),
            Some(q) => narrow(&mut c, &|id| {
                let d = self.def(*id);
                d.container.as_deref() == Some(q) || stem(self.path(*id)) == q
            }),
            None if r.call => narrow(&mut c, &|id| {
                let d = self.def(*id);
                d.kind != Kind::Method || (d.container.is_some() && d.container.as_deref() == own)
            }),
            None => {}
        }
        if r.call && r.qual.as_deref().is_some_and(|q| !SELF.contains(&q)) {
            // `obj.parse()`: whatever `obj` is, it is not a free function.
            narrow(&mut c, &|id| self.def(*id).container.is_some());
        }
        // 2. A body over a prototype.
        narrow(&mut c, &|id| self.def(*id).kind != Kind::Prototype);
        // 3. The same file.
        if c.len() > 1 {
            narrow(&mut c, &|id| id.file == file);
        }
        // 4. Go: the same package.
        if c.len() > 1 && self.lang(file) == Lang::Go {
            let dir = parent(self.files[file as usize].0);
            narrow(&mut c, &|id| parent(self.path(*id)) == dir);
        }
        // 5. An imported module.
        if c.len() > 1 {
            let imports = &self.files[file as usize].1.facts.imports;
            narrow(&mut c, &|id| {
                let p = self.path(*id);
                let (s, d) = (stem(p), parent(p).rsplit('/').next().unwrap_or(""));
                imports
                    .iter()
                    .any(|i| mentions(i, s) || (!d.is_empty() && mentions(i, d)))
            });
        }
        if c.len() == 1 {
            (c, Certainty::Resolved)
        } else {
            let n = all.len();
            (c, Certainty::NameMatched(n))
        }
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
            let (to, certainty) = self.resolve(fi, r);
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
        let d = tempfile::tempdir().unwrap();
        for (p, s) in files {
            let path = d.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, s).unwrap();
        }
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
    fn identifiers_match_whole_words() {
        assert!(mentions("use crate::parse::Error;", "parse"));
        assert!(!mentions("use crate::parser;", "parse"));
        assert_eq!(stem("requests/utils.py"), "utils");
    }
}
