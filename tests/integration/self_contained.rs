//! The repository explains itself: nothing a user reads (the README, the
//! reference in docs/, the scaffolded files, the prompts, the source that
//! prints iteration files and messages) may send them to a document that is
//! not in the repository. Test fixtures are data written by older releases
//! and are not read.

use std::path::{Path, PathBuf};

const PRODUCT: &[&str] = &[
    "README.md",
    "Cargo.toml",
    "ooda.yaml",
    "docs",
    "src",
    "templates",
    "subagents",
    "briefs",
    "examples",
    "iterations/README.md",
    ".ci",
];

const OUTSIDE: &[&str] = &["DESIGN.md", "../shared", "ARCHITECTURE-REVIEW"];

fn files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        for e in std::fs::read_dir(path).unwrap() {
            files(&e.unwrap().path(), out);
        }
    } else if path.is_file() {
        out.push(path.to_path_buf());
    }
}

#[test]
fn the_product_cites_nothing_outside_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut all = Vec::new();
    for p in PRODUCT {
        files(&root.join(p), &mut all);
    }
    assert!(
        all.len() > 50,
        "only {} files found under {root:?}",
        all.len()
    );
    let mut found = Vec::new();
    for f in &all {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            if let Some(word) = OUTSIDE.iter().find(|w| line.contains(*w)) {
                let rel = f.strip_prefix(root).unwrap();
                found.push(format!("{}:{}: cites {word}", rel.display(), n + 1));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn every_docs_link_points_at_a_file_in_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    files(&root.join("docs"), &mut pages);
    let mut broken = Vec::new();
    for page in pages
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
    {
        let text = std::fs::read_to_string(page).unwrap();
        for (n, line) in text.lines().enumerate() {
            let mut rest = line;
            while let Some(i) = rest.find("](") {
                rest = &rest[i + 2..];
                let Some(end) = rest.find(')') else { break };
                let target = rest[..end].split('#').next().unwrap_or("");
                rest = &rest[end..];
                if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                if !page.parent().unwrap().join(target).exists() {
                    broken.push(format!(
                        "{}:{}: {target}",
                        page.strip_prefix(root).unwrap().display(),
                        n + 1
                    ));
                }
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}
