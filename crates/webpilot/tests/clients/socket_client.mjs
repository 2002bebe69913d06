// A webpilot test client built on the official JavaScript Socket.IO client (socket.io-client).
// Usage: node socket_client.mjs SOCKET_URL SESSION_ID [TASK_DETAILS]
// Connects to SOCKET_URL exactly as given with auth {sessionId}; if TASK_DETAILS is given, emits a newTask
// and prints its ack. Prints one JSON object per line for every event received ({"event", "data"}), and
// exits after task_completed, after connect_error, or after 45 seconds.
import { io } from "socket.io-client";

const [url, sessionId, task] = process.argv.slice(2);
const out = (o) => console.log(JSON.stringify(o));
const timer = setTimeout(() => {
  out({ event: "timeout" });
  process.exit(3);
}, 45000);

const socket = io(url, { auth: { sessionId }, reconnection: false, timeout: 10000 });
socket.on("connect", async () => {
  out({ event: "connect" });
  if (task) {
    const ack = await socket
      .timeout(30000)
      .emitWithAck("message", { actionType: "newTask", newState: "start", taskDetails: task });
    out({ event: "ack", data: ack });
  }
});
socket.on("connect_error", (e) => {
  out({ event: "connect_error", message: e.message });
  clearTimeout(timer);
  process.exit(0);
});
socket.onAny((event, data) => {
  out({ event, data });
  if (event === "message" && data && data.type === "task_completed") {
    clearTimeout(timer);
    socket.disconnect();
    process.exit(0);
  }
});
