//! `ooda mcp [--root DIR] [--index-dir DIR]`: the code index's tools
//! (`explore`, `find_symbol`, `symbol`, `callers`, `callees`, `impact`)
//! as an MCP server over stdio, for an agent CLI to query instead of
//! grepping.
//!
//! A profile with `index: true` registers it with Claude Code, Codex or
//! Gemini CLI for one step, on the candidate worktree; it then runs as the
//! CLI's child, inside ooda's sandbox, where `.ooda/index/` may not be
//! writable: the index ooda built before the step is loaded, refreshed in
//! memory for the files the step changes, and saved back only if it can
//! be. The tools answer exactly as the llm driver's do (one definition,
//! `code_index/explorer.rs`): a `file` argument outside the worktree is refused
//! with the file tools' words, as a tool error the model reads.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rmcp::ErrorData;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer, ServiceExt};
use serde_json::Value;

use crate::code_index::Limits;
use crate::code_index::explorer::{Explorer, specs};
use crate::error::{Error, Result};
use crate::exit::Exit;

/// The index is built (or loaded) on a thread of its own from the start,
/// so that `initialize` is answered at once however large the repository
/// is (an agent CLI may give a server seconds to start); the first tool
/// call waits for it.
struct IndexServer {
    inner: Arc<Inner>,
}

struct Inner {
    explorer: Mutex<Option<Explorer>>,
    building: Mutex<Option<std::thread::JoinHandle<Explorer>>>,
}

impl Inner {
    fn call(&self, name: &str, args: &Value) -> std::result::Result<String, String> {
        let mut slot = self.explorer.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            let handle = self
                .building
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            *slot = match handle.map(std::thread::JoinHandle::join) {
                Some(Ok(ex)) => Some(ex),
                _ => return Err("the code index could not be built (see ooda's stderr)".into()),
            };
        }
        slot.as_mut().map_or_else(
            || Err("the code index is not available".to_string()),
            |ex| ex.call(name, args),
        )
    }
}

impl ServerHandler for IndexServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("ooda", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "A code index of this worktree. Call `explore` first to see a function or type in context (source, callers, callees, tests); `callers`/`impact` before changing a signature; `find_symbol` to locate a name. Answers mark each edge resolved or name-matched.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListToolsResult, ErrorData> {
        let tools = specs()
            .into_iter()
            .map(|s| {
                let schema = match s.schema {
                    Value::Object(o) => o,
                    _ => Default::default(),
                };
                Tool::new(s.name, s.description, Arc::new(schema))
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        // Off the runtime's thread: a slow answer must not stop the server
        // from reading the client's next message (a cancellation, a ping).
        let inner = Arc::clone(&self.inner);
        let name = request.name.to_string();
        let answer = tokio::task::spawn_blocking(move || inner.call(&name, &args))
            .await
            .unwrap_or_else(|e| Err(format!("the code index failed on this call: {e}")));
        // What the worktree's files hold goes to the tool, as the file
        // tools' answers do, with secrets redacted.
        let redact = |t: &str| crate::text::redact::redact(t);
        Ok(match answer {
            Ok(t) => CallToolResult::success(vec![ContentBlock::text(redact(&t))]),
            Err(e) => CallToolResult::error(vec![ContentBlock::text(redact(&e))]),
        }
        .into())
    }
}

pub(crate) fn run(root: Option<&Path>, index_dir: Option<&Path>) -> Result<Exit> {
    let root: PathBuf = match root {
        Some(r) => r.to_path_buf(),
        None => {
            std::env::current_dir().map_err(|e| Error::Input(format!("no current folder: {e}")))?
        }
    };
    let root = root.canonicalize().map_err(|e| {
        Error::Input(format!(
            "{} is not a folder ooda can index ({e}); pass --root DIR with an existing worktree",
            root.display()
        ))
    })?;
    if !root.is_dir() {
        return Err(Error::Input(format!(
            "{} is a file; pass --root DIR with the worktree's folder",
            root.display()
        )));
    }
    let dir = index_dir.map_or_else(|| crate::code_index::dir_for(&root), Path::to_path_buf);
    let building = std::thread::spawn(move || Explorer::open(&root, Some(&dir), Limits::default()));
    let server = IndexServer {
        inner: Arc::new(Inner {
            explorer: Mutex::new(None),
            building: Mutex::new(Some(building)),
        }),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Internal(format!("cannot start the MCP server's runtime: {e}")))?;
    rt.block_on(async {
        let service = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| Error::Input(format!("the MCP client did not initialize: {e}")))?;
        service
            .waiting()
            .await
            .map_err(|e| Error::Internal(format!("the MCP server stopped: {e}")))?;
        Ok::<(), Error>(())
    })?;
    Ok(Exit::Ok)
}
