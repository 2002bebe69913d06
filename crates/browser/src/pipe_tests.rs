//! The pipe bridge: its router keeps attached clients' answers and sessions apart from chromiumoxide's,
//! and one connection with the token is bridged to the pipes.

use super::{start, Router, CLIENT_IDS};

#[test]
fn a_clients_answers_sessions_and_their_events_go_to_it_alone() {
    let (to_client, mut client) = crate::inbox::inbox();
    let mut router = Router { clients: vec![Some(to_client)], ..Router::default() };
    let attach = r#"{"id":1,"method":"Target.attachToTarget","params":{"targetId":"T"}}"#;
    let sent = router.command_of(0, attach.to_owned());
    assert!(sent.expect("forwarded").contains(&format!("\"id\":{CLIENT_IDS}")));
    let attached = r#"{"method":"Target.attachedToTarget","params":{"sessionId":"S","targetInfo":{"targetId":"T"}}}"#;
    assert_eq!(router.route(attached.to_owned()), None, "chromiumoxide never hears of the client's session");
    let answer = format!(r#"{{"id":{CLIENT_IDS},"result":{{"sessionId":"S"}}}}"#);
    assert_eq!(router.route(answer), None);
    assert_eq!(client.try_recv().expect("the answer"), r#"{"id":1,"result":{"sessionId":"S"}}"#);
    let event = r#"{"method":"Runtime.x","params":{},"sessionId":"S"}"#;
    assert_eq!(router.route(event.to_owned()), None);
    assert_eq!(client.try_recv().expect("the session's event"), event);
    // A session attached under the client's is the client's too.
    let child = r#"{"method":"Target.attachedToTarget","params":{"sessionId":"C","targetInfo":{"targetId":"W"}},"sessionId":"S"}"#;
    assert_eq!(router.route(child.to_owned()), None);
    assert_eq!(client.try_recv().expect("the child's attach"), child);
    let of_child = r#"{"method":"Runtime.y","params":{},"sessionId":"C"}"#;
    assert_eq!(router.route(of_child.to_owned()), None);
    assert_eq!(client.try_recv().expect("the child's event"), of_child);
    // Once the client is gone its sessions' events are dropped, not handed to chromiumoxide.
    drop(client);
    router.forget_if_gone(0);
    assert_eq!(router.route(of_child.to_owned()), None, "dropped");
    let detached = r#"{"method":"Target.detachedFromTarget","params":{"sessionId":"C"},"sessionId":"S"}"#;
    assert_eq!(router.route(detached.to_owned()), None);
    assert_eq!(router.route(of_child.to_owned()).as_deref(), Some(of_child), "an unknown session's");
    for own in [r#"{"id":7,"result":{}}"#, r#"{"method":"Runtime.x","params":{},"sessionId":"P"}"#] {
        assert_eq!(router.route(own.to_owned()).as_deref(), Some(own), "chromiumoxide's own");
    }
}
#[test]
fn a_commands_id_is_rewritten_in_place_and_its_answer_gets_the_clients_id_back() {
    let (to_client, mut client) = crate::inbox::inbox();
    let mut router = Router { clients: vec![Some(to_client)], ..Router::default() };
    let big = "x".repeat(1000);
    let command = format!(r#"{{"id":5,"method":"Runtime.evaluate","params":{{"expression":"{big}"}}}}"#);
    let sent = router.command_of(0, command).expect("forwarded");
    let expected = format!(r#"{{"id":{CLIENT_IDS},"method":"Runtime.evaluate","params":{{"expression":"{big}"}}}}"#);
    assert_eq!(sent, expected);
    let answer = format!(r#"{{"id":{CLIENT_IDS},"result":{{"result":{{"value":"{big}"}}}},"sessionId":"P"}}"#);
    assert_eq!(router.route(answer), None);
    let got = client.try_recv().expect("the answer");
    assert_eq!(got, format!(r#"{{"id":5,"result":{{"result":{{"value":"{big}"}}}},"sessionId":"P"}}"#));
    assert!(router.sessions.is_empty(), "an evaluate attaches no session");
}

#[test]
fn a_client_that_falls_too_far_behind_is_dropped_and_the_others_go_on() {
    let (slow_tx, mut slow) = crate::inbox::inbox();
    let (quick_tx, mut quick) = crate::inbox::inbox();
    let mut router = Router { clients: vec![Some(slow_tx), Some(quick_tx)], ..Router::default() };
    // Four answers (each with its few bytes of JSON around the value) fit the budget; a fifth does not.
    let big = "x".repeat(crate::inbox::MAX_UNREAD / 4 - 100);
    // Each client evaluates large values; the slow one never reads its answers.
    let route_answer = |router: &mut Router, client: usize| {
        let command =
            format!(r#"{{"id":1,"method":"Runtime.evaluate","params":{{"expression":"v"}},"sessionId":"P{client}"}}"#);
        let sent = router.command_of(client, command).expect("forwarded");
        let id = crate::pipe::leading_id(&sent).expect("id").0;
        router.route(format!(r#"{{"id":{id},"result":{{"value":"{big}"}}}}"#))
    };
    for _ in 0..4 {
        assert_eq!(route_answer(&mut router, 0), None, "handed to the slow client");
        assert_eq!(route_answer(&mut router, 1), None);
        assert!(quick.try_recv().is_ok_and(|a| a.len() > big.len()), "the quick client reads its answer");
    }
    assert!(router.clients[0].is_some(), "four answers are within the budget");
    assert_eq!(route_answer(&mut router, 0), None, "the fifth is past it: dropped, not handed to chromiumoxide");
    assert!(router.clients[0].is_none(), "the slow client is forgotten");
    assert!(router.calls.values().all(|(client, _, _)| *client != 0), "with its calls");
    assert_eq!(route_answer(&mut router, 1), None);
    assert!(quick.try_recv().is_ok(), "the other client goes on");
    // The slow client still reads the four answers it was given, then its inbox ends as having fallen behind.
    let mut read = 0;
    while slow.try_recv().is_ok() {
        read += 1;
    }
    assert_eq!(read, 4);
    assert!(slow.fell_behind());
}

use futures::{SinkExt, StreamExt};
use std::os::fd::OwnedFd;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::Message;

#[tokio::test]
async fn only_one_connection_with_the_token_is_bridged_and_messages_cross_both_ways() {
    // The "browser" side: it reads what the bridge writes to fd 3 and writes what it sends on fd 4.
    let (browser_reads, to_browser) = std::io::pipe().expect("pipe");
    let (from_browser, browser_writes) = std::io::pipe().expect("pipe");
    let bridge = start(OwnedFd::from(to_browser), OwnedFd::from(from_browser)).await.expect("bridge");
    let (prefix, _token) = bridge.url.rsplit_once('/').expect("a token in the path");
    let wrong = format!("{prefix}/{}", "0".repeat(64));
    assert!(tokio_tungstenite::connect_async(&wrong).await.is_err(), "a wrong token is refused");
    let (mut ws, _) = tokio_tungstenite::connect_async(&bridge.url).await.expect("the service connects");
    let port = bridge.url.split(':').nth(2).and_then(|p| p.split('/').next()).expect("port").to_owned();
    let refused = tokio::net::TcpStream::connect(format!("127.0.0.1:{port}")).await;
    assert!(refused.is_err(), "the listener is closed once the service is connected");

    ws.send(Message::text(r#"{"id":1}"#)).await.expect("send");
    let mut reader = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(browser_reads)).expect("rx");
    let mut got = vec![0u8; 9];
    reader.read_exact(&mut got).await.expect("read");
    assert_eq!(got, b"{\"id\":1}\0");
    let mut writer = tokio::net::unix::pipe::Sender::from_owned_fd(OwnedFd::from(browser_writes)).expect("tx");
    writer.write_all(b"{\"id\":1,\"result\":{}}\0{\"method\":").await.expect("write");
    writer.write_all(b"\"x\"}\0").await.expect("write");
    let first = ws.next().await.expect("a message").expect("ok");
    assert_eq!(first.into_text().expect("text").as_str(), r#"{"id":1,"result":{}}"#);
    let second = ws.next().await.expect("a message").expect("ok");
    assert_eq!(second.into_text().expect("text").as_str(), r#"{"method":"x"}"#);
    // The browser going away ends the bridge and closes the client's connection.
    drop(writer);
    while let Some(Ok(m)) = ws.next().await {
        assert!(m.is_close(), "{m:?}");
    }
    bridge.task.await.expect("the bridge ends");
}
