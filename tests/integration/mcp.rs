//! `ooda mcp`: the code index served over MCP on stdio, driven by the
//! official SDK's client as an agent CLI would drive it.

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

use crate::test::Test;

fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn call(name: &str, args: Value) -> CallToolRequestParams {
    let Value::Object(args) = args else {
        panic!("arguments are an object")
    };
    CallToolRequestParams::new(name.to_string()).with_arguments(args)
}

#[test]
fn a_client_initializes_lists_the_tools_and_calls_them() {
    let t = Test::new();
    t.write(
        "src/parse.rs",
        "/// The major number.\npub fn parse_major(s: &str) -> u64 {\n    digits(s)\n}\n\nfn digits(s: &str) -> u64 {\n    s.len() as u64\n}\n",
    );
    t.write(
        "src/lib.rs",
        "mod parse;\npub fn version(s: &str) -> u64 {\n    parse::parse_major(s)\n}\n",
    );
    t.write(
        "tests/api.rs",
        "#[test]\nfn major() {\n    assert_eq!(ooda_fixture::version(\"1\"), 1);\n}\n",
    );
    // A checkout whose own .gitignore does not name `.ooda/`.
    t.write(".gitignore", "target/\n");
    t.commit("code");
    let index_dir = t.path().join(".ooda/index");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_ooda"));
        cmd.args(["mcp", "--root"])
            .arg(t.path())
            .current_dir(t.path());
        let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
        let info = client.peer_info().expect("the server answered initialize");
        assert_eq!(
            info.server_info.as_ref().map(|i| i.name.as_str()),
            Some("ooda")
        );
        let tools = client.list_all_tools().await.unwrap();
        let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
        names.sort();
        assert_eq!(
            names,
            [
                "callees",
                "callers",
                "explore",
                "find_symbol",
                "impact",
                "symbol"
            ]
        );
        assert!(tools.iter().all(|t| t.description.is_some()));

        let r = client
            .call_tool(call("explore", json!({"name": "parse_major"})))
            .await
            .unwrap();
        assert_ne!(r.is_error, Some(true));
        let x = text(&r);
        for want in [
            "src/parse.rs:2-4 function parse_major — pub fn parse_major(s: &str) -> u64",
            "    1| /// The major number.",
            "src/lib.rs:2-4 function version — at line 3 [resolved]",
            "digits (line 3) → src/parse.rs:6-8 function digits [resolved]",
            "tests/api.rs:2-4 function major (test code) (through a caller)",
        ] {
            assert!(x.contains(want), "{want}\nin\n{x}");
        }
        let r = client
            .call_tool(call("callers", json!({"name": "digits", "depth": 2})))
            .await
            .unwrap();
        assert!(
            text(&r).contains("    src/lib.rs:2-4 function version"),
            "{}",
            text(&r)
        );

        // A path outside the worktree is refused as the file tools refuse
        // it, as a tool error the model reads.
        for (file, why) in [
            ("../outside.rs", "uses `..`"),
            ("/etc/passwd", "absolute path"),
        ] {
            let r = client
                .call_tool(call("symbol", json!({"name": "secret", "file": file})))
                .await
                .unwrap();
            assert_eq!(r.is_error, Some(true));
            assert!(text(&r).contains(why), "{}", text(&r));
        }
        let r = client.call_tool(call("grep", json!({}))).await.unwrap();
        assert_eq!(r.is_error, Some(true));
        client.cancel().await.unwrap();
    });
    // The index stays in ooda's folder, and out of git.
    assert!(std::fs::read_dir(&index_dir).unwrap().count() >= 1);
    let status = t.git(&["status", "--porcelain", "--ignored"]);
    assert!(!status.contains("?? .ooda"), "{status}");
}

#[test]
fn a_root_that_is_not_a_folder_is_a_clear_error() {
    let t = Test::new();
    let run = t.ooda(&["mcp", "--root", "no/such/dir"]).expect(2);
    assert!(
        run.stderr
            .contains("no/such/dir is not a folder ooda can index"),
        "{}",
        run.stderr
    );
}
