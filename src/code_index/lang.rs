//! Which grammar reads a file, and what its parse trees call a definition,
//! a call and an import.
//!
//! The walk in `extract.rs` is one algorithm for every language; what
//! differs is named here, as tables of node kinds, so that a language is
//! added by a grammar crate and a few lines, not by another walker.

use serde::{Deserialize, Serialize};

/// A language the index parses. Anything else falls back to the text tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Lang {
    Rust,
    Python,
    JavaScript,
    TypeScript,
    Tsx,
    Go,
    C,
    Cpp,
}

impl Lang {
    /// The language of a file, by its extension. A `.h` is read as C: the
    /// C grammar reads the C subset of headers, and C++ headers mostly
    /// parse under it too (what does not is listed as partly parsed).
    pub(crate) fn of(path: &str) -> Option<Lang> {
        let ext = path.rsplit_once('.')?.1;
        Some(match ext {
            "rs" => Lang::Rust,
            "py" | "pyi" => Lang::Python,
            "js" | "mjs" | "cjs" | "jsx" => Lang::JavaScript,
            "ts" | "mts" | "cts" => Lang::TypeScript,
            "tsx" => Lang::Tsx,
            "go" => Lang::Go,
            "c" | "h" => Lang::C,
            "cc" | "cpp" | "cxx" | "c++" | "hpp" | "hh" | "hxx" | "h++" | "ipp" => Lang::Cpp,
            _ => return None,
        })
    }

    pub(crate) fn grammar(self) -> tree_sitter::Language {
        match self {
            Lang::Rust => tree_sitter_rust::LANGUAGE.into(),
            Lang::Python => tree_sitter_python::LANGUAGE.into(),
            Lang::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Lang::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Lang::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Lang::Go => tree_sitter_go::LANGUAGE.into(),
            Lang::C => tree_sitter_c::LANGUAGE.into(),
            Lang::Cpp => tree_sitter_cpp::LANGUAGE.into(),
        }
    }

    /// Languages that call each other's definitions by name: JavaScript
    /// and TypeScript; C and C++. A JavaScript call never lands in Python.
    pub(crate) fn family(self) -> u8 {
        match self {
            Lang::JavaScript | Lang::TypeScript | Lang::Tsx => 0,
            Lang::C | Lang::Cpp => 1,
            Lang::Rust => 2,
            Lang::Python => 3,
            Lang::Go => 4,
        }
    }

    fn js(self) -> bool {
        matches!(self, Lang::JavaScript | Lang::TypeScript | Lang::Tsx)
    }

    fn c(self) -> bool {
        matches!(self, Lang::C | Lang::Cpp)
    }

    /// What a node of this kind defines, if anything. Nodes that only give
    /// their children a container (a Rust `impl`) are [`Role::Container`].
    pub(crate) fn role(self, kind: &str) -> Option<Role> {
        use Kind::*;
        let def = |k| Some(Role::Def(k));
        match (self, kind) {
            (Lang::Rust, "function_item" | "function_signature_item") => def(Function),
            (Lang::Rust, "struct_item" | "union_item") => def(Class),
            (Lang::Rust, "enum_item" | "trait_item" | "type_item") => def(Type),
            (Lang::Rust, "const_item" | "static_item") => def(Const),
            (Lang::Rust, "macro_definition") => def(Macro),
            (Lang::Rust, "mod_item") => def(Module),
            (Lang::Rust, "impl_item") => Some(Role::Container),
            (Lang::Python, "function_definition") => def(Function),
            (Lang::Python, "class_definition") => def(Class),
            // `x = lambda …`, and a module's constants (`WIN = …`).
            (Lang::Python, "assignment") => Some(Role::Bound),
            (l, "function_declaration" | "generator_function_declaration") if l.js() => {
                def(Function)
            }
            (l, "method_definition" | "method_signature" | "abstract_method_signature")
                if l.js() =>
            {
                def(Method)
            }
            (l, "class_declaration" | "abstract_class_declaration" | "class") if l.js() => {
                def(Class)
            }
            (l, "interface_declaration" | "type_alias_declaration" | "enum_declaration")
                if l.js() =>
            {
                def(Type)
            }
            // An overload's signature: the implementation is the definition.
            (l, "function_signature") if l.js() => def(Prototype),
            // `const f = () => …`, `X.prototype.f = function …`: a
            // definition only when the value is a function (checked by
            // the walk).
            (l, "variable_declarator" | "assignment_expression" | "pair") if l.js() => {
                Some(Role::Bound)
            }
            (Lang::Go, "function_declaration") => def(Function),
            (Lang::Go, "method_declaration") => def(Method),
            (Lang::Go, "type_spec") => def(Class),
            (l, "function_definition") if l.c() => def(Function),
            (l, "struct_specifier" | "union_specifier" | "class_specifier") if l.c() => def(Class),
            (l, "enum_specifier" | "type_definition" | "alias_declaration") if l.c() => def(Type),
            (l, "preproc_function_def" | "preproc_def") if l.c() => def(Macro),
            (Lang::Cpp, "namespace_definition") => def(Module),
            // A prototype (`int f(int);` in a header, a method declared in
            // a class body): where a reader looks first, so indexed, but
            // ranked after the definition with a body.
            (l, "declaration" | "field_declaration") if l.c() => Some(Role::Prototype),
            _ => None,
        }
    }

    /// Whether a node of this kind is a call, and so names its callee.
    pub(crate) fn is_call(self, kind: &str) -> bool {
        match self {
            Lang::Rust => matches!(kind, "call_expression" | "macro_invocation"),
            Lang::Python => kind == "call",
            Lang::Go => kind == "call_expression",
            l if l.js() => matches!(kind, "call_expression" | "new_expression"),
            _ => kind == "call_expression",
        }
    }

    /// The field of a call node that holds the callee.
    pub(crate) fn callee_field(self, kind: &str) -> &'static str {
        match (self, kind) {
            (Lang::Rust, "macro_invocation") => "macro",
            (_, "new_expression") => "constructor",
            _ => "function",
        }
    }

    /// Whether a node of this kind is an import (a `use`, an `import`, an
    /// `#include`).
    pub(crate) fn is_import(self, kind: &str) -> bool {
        match self {
            Lang::Rust => matches!(kind, "use_declaration" | "extern_crate_declaration"),
            Lang::Python => matches!(kind, "import_statement" | "import_from_statement"),
            Lang::Go => kind == "import_spec",
            l if l.js() => matches!(kind, "import_statement"),
            _ => kind == "preproc_include",
        }
    }
}

/// Whether a `.h` file holds C++ (a namespace, a template, a class with
/// a body, `std::`): such a header is parsed with the C++ grammar.
pub(crate) fn looks_like_cpp(src: &[u8]) -> bool {
    static CPP: std::sync::OnceLock<regex::bytes::Regex> = std::sync::OnceLock::new();
    CPP.get_or_init(|| {
        regex::bytes::Regex::new(
            r"(?m)^\s*(namespace\b|template\s*<|using\s+namespace\b|class\s+\w+[^;]*$|(public|private|protected)\s*:)|\bstd::",
        )
        .expect("a valid regex")
    })
    .is_match(&src[..src.len().min(256 * 1024)])
}

/// What a node contributes to the index.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Role {
    Def(Kind),
    /// Gives its children a container name (Rust's `impl Foo`).
    Container,
    /// A definition if what it binds is a function or a class.
    Bound,
    /// A declaration that is a definition only if it declares a function.
    Prototype,
}

/// The kind of a definition, as the tools print it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Kind {
    Function,
    Method,
    Class,
    Type,
    Const,
    Macro,
    Module,
    /// A function declared without a body (a C prototype, a method of an
    /// interface).
    Prototype,
    /// A test named by a string (`it("parses", …)`).
    Test,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Function => "function",
            Kind::Method => "method",
            Kind::Class => "class",
            Kind::Type => "type",
            Kind::Const => "const",
            Kind::Macro => "macro",
            Kind::Module => "module",
            Kind::Prototype => "prototype",
            Kind::Test => "test",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Kind> {
        [
            Kind::Function,
            Kind::Method,
            Kind::Class,
            Kind::Type,
            Kind::Const,
            Kind::Macro,
            Kind::Module,
            Kind::Prototype,
            Kind::Test,
        ]
        .into_iter()
        .find(|k| k.name() == s || (s == "struct" && *k == Kind::Class))
    }

    /// Whether code runs in it, so that calls inside it are its calls.
    pub(crate) fn runs(self) -> bool {
        matches!(self, Kind::Function | Kind::Method | Kind::Test)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_pick_a_grammar_and_others_none() {
        assert_eq!(Lang::of("src/a.rs"), Some(Lang::Rust));
        assert_eq!(Lang::of("x/y.test.ts"), Some(Lang::TypeScript));
        assert_eq!(Lang::of("zlib.h"), Some(Lang::C));
        assert_eq!(Lang::of("a.hpp"), Some(Lang::Cpp));
        assert_eq!(Lang::of("README.md"), None);
        assert_eq!(Lang::of("Makefile"), None);
        assert!(looks_like_cpp(
            b"#pragma once\nnamespace fmt {\ntemplate <typename T> class buffer;\n}\n"
        ));
        assert!(looks_like_cpp(
            b"class xml_node\n{\npublic:\n  int x;\n};\n"
        ));
        assert!(!looks_like_cpp(b"#ifndef ZLIB_H\ntypedef struct z_stream_s { int x; } z_stream;\n/* the class of */\nint deflate(z_streamp strm, int flush);\n"));
        for l in [
            Lang::Rust,
            Lang::Python,
            Lang::JavaScript,
            Lang::TypeScript,
            Lang::Tsx,
            Lang::Go,
            Lang::C,
            Lang::Cpp,
        ] {
            let mut p = tree_sitter::Parser::new();
            p.set_language(&l.grammar()).unwrap();
        }
    }
}
