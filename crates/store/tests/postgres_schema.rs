//! The PostgreSQL migration runs on a real PostgreSQL (the local server every machine has), in a
//! throw-away schema, and the store's portable statements work against it.

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgConnection, Row};
use std::str::FromStr;

fn url() -> String {
    std::env::var("WEBPILOT_TEST_POSTGRES_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

#[tokio::test]
async fn the_postgres_schema_migrates_and_takes_the_portable_statements() {
    let schema = format!("webpilot_test_{}", uuid::Uuid::new_v4().simple());
    let mut admin = PgConnection::connect(&url()).await.expect("PostgreSQL at WEBPILOT_TEST_POSTGRES_URL");
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}"))).execute(&mut admin).await.unwrap();

    let opts = PgConnectOptions::from_str(&url()).unwrap().options([("search_path", schema.as_str())]);
    let pool = PgPoolOptions::new().max_connections(2).connect_with(opts).await.unwrap();
    webpilot_store::POSTGRES_MIGRATIONS.run(&pool).await.expect("migrations run on PostgreSQL");
    // Running them again is a no-op.
    webpilot_store::POSTGRES_MIGRATIONS.run(&pool).await.unwrap();

    sqlx::query("INSERT INTO users (id, name, balance_micros, created_at) VALUES ($1, $2, $3, $4)")
        .bind("usr_1")
        .bind("pg")
        .bind(5_000_000i64)
        .bind(1i64)
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO sessions (id, user_id, state, params, created_at) VALUES ($1, $2, $3, $4, $5)")
        .bind("ses_1")
        .bind("usr_1")
        .bind("active")
        .bind("{}")
        .bind(2i64)
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO tasks (id, session_id, user_id, details, status, created_at) VALUES ($1, $2, $3, $4, 'running', $5)")
        .bind("task_1")
        .bind("ses_1")
        .bind("usr_1")
        .bind("report the title")
        .bind(3i64)
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("UPDATE users SET balance_micros = balance_micros - $1 WHERE id = $2")
        .bind(250_000i64)
        .bind("usr_1")
        .execute(&pool)
        .await
        .unwrap();
    let row = sqlx::query("SELECT balance_micros, deactivated_at FROM users WHERE id = $1")
        .bind("usr_1")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(row.get::<i64, _>(0), 4_750_000);
    assert_eq!(row.get::<Option<i64>, _>(1), None);
    // Foreign keys hold on PostgreSQL as on SQLite.
    let orphan = sqlx::query("INSERT INTO tasks (id, session_id, user_id, details, status, created_at) VALUES ('t2', 'nope', 'usr_1', 'x', 'running', 1)")
        .execute(&pool)
        .await;
    assert!(orphan.is_err());

    pool.close().await;
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE"))).execute(&mut admin).await.unwrap();
}
