//! Session events across nodes: the node holding a session publishes each of its events on the Redis
//! channel `<prefix>:events:<session>`; a node with a Socket.IO client of that session subscribes to
//! it and emits what arrives. The message is the Socket.IO event's name and payload, as JSON.

use crate::{ClusterError, RedisLink};
use futures::{Stream, StreamExt};
use serde_json::{json, Value};
use tokio::sync::broadcast::{self, error::RecvError};
use webpilot_core::events::SessionEvent;

/// Publishes and subscribes to session events; cheap to clone.
#[derive(Clone, Debug)]
pub struct EventFanout {
    link: RedisLink,
    prefix: String,
}

/// An event as it crossed Redis: the Socket.IO event name and payload.
#[derive(Debug, Clone, PartialEq)]
pub struct WireEvent {
    pub name: String,
    pub payload: Value,
}

impl WireEvent {
    /// `end_session` is the last event of a session.
    pub fn is_end(&self) -> bool {
        self.name == "end_session"
    }
}

impl EventFanout {
    pub fn new(link: RedisLink, prefix: &str) -> EventFanout {
        EventFanout { link, prefix: prefix.to_owned() }
    }

    fn channel(&self, session: &str) -> String {
        format!("{}:events:{session}", self.prefix)
    }

    /// Publishes one event of `session`.
    pub async fn publish(&self, session: &str, event: &SessionEvent) -> Result<(), ClusterError> {
        let (name, payload) = event.wire();
        let message = json!({ "name": name, "payload": payload }).to_string();
        let mut conn = self.link.conn();
        let channel = self.channel(session);
        self.link
            .run(async move { redis::cmd("PUBLISH").arg(channel).arg(message).query_async::<i64>(&mut conn).await })
            .await?;
        Ok(())
    }

    /// Publishes every event of `session` from `events` until its end (a spawned task).
    pub fn publish_all(&self, session: String, mut events: broadcast::Receiver<SessionEvent>) {
        let fanout = self.clone();
        webpilot_tasks::spawn_owned("event fanout", async move {
            loop {
                match events.recv().await {
                    Ok(event) => {
                        if let Err(e) = fanout.publish(&session, &event).await {
                            tracing::debug!(error = %e, "publishing a session event failed");
                        }
                        if matches!(event, SessionEvent::EndSession { .. }) {
                            break;
                        }
                    }
                    Err(RecvError::Lagged(n)) => tracing::warn!(skipped = n, "session events not published"),
                    Err(RecvError::Closed) => break,
                }
            }
        });
    }

    /// The events of `session` published from now on, on a connection of their own.
    pub async fn subscribe(
        &self,
        session: &str,
    ) -> Result<impl Stream<Item = WireEvent> + Send + 'static, ClusterError> {
        let mut pubsub = self.link.run(self.link.client().get_async_pubsub()).await?;
        let channel = self.channel(session);
        self.link.run(pubsub.subscribe(&channel)).await?;
        Ok(pubsub.into_on_message().filter_map(|msg| async move {
            let text: String = msg.get_payload().ok()?;
            let value: Value = serde_json::from_str(&text).ok()?;
            Some(WireEvent { name: value.get("name")?.as_str()?.to_owned(), payload: value.get("payload")?.clone() })
        }))
    }
}
