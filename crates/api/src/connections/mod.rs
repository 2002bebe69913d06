//! The registries of live connections, each owned by its channel and held by `AppState`: the Socket.IO
//! sockets (`sockets`), the MCP sessions (`mcp`) and the DevTools connections (`devtools`). They import no
//! route and no state, so the handlers sit above them.

pub mod devtools;
pub mod mcp;
pub mod sockets;
