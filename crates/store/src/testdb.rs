//! Throw-away PostgreSQL schemas for tests: the suites run on SQLite by default and on the local
//! PostgreSQL when `WEBPILOT_TEST_DATABASE=postgres`, each test in a fresh schema dropped after it.

use sqlx::{Connection, Executor, PgConnection};

/// The server the tests use, unless `WEBPILOT_TEST_POSTGRES_URL` names another.
pub const DEFAULT_TEST_POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// The server for tests.
pub fn test_postgres_url() -> String {
    std::env::var("WEBPILOT_TEST_POSTGRES_URL").unwrap_or_else(|_| DEFAULT_TEST_POSTGRES_URL.into())
}

/// A fresh schema on the test server; dropped (with everything in it) when this is dropped.
#[derive(Debug)]
pub struct TestDatabase {
    /// The URL a store opens: the server, with this schema as its search path.
    pub url: String,
    schema: String,
}

impl TestDatabase {
    /// `Some` fresh schema when `WEBPILOT_TEST_DATABASE=postgres`, `None` for SQLite.
    pub async fn from_env() -> Result<Option<TestDatabase>, sqlx::Error> {
        match std::env::var("WEBPILOT_TEST_DATABASE").as_deref() {
            Ok("postgres") => Ok(Some(Self::create().await?)),
            _ => Ok(None),
        }
    }

    /// Creates a fresh schema.
    pub async fn create() -> Result<TestDatabase, sqlx::Error> {
        let server = test_postgres_url();
        let schema = format!("webpilot_test_{}", uuid::Uuid::new_v4().simple());
        let mut admin = PgConnection::connect(&server).await?;
        // The name is ours (a UUID), never input.
        admin.execute(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}"))).await?;
        admin.close().await?;
        let sep = if server.contains('?') { '&' } else { '?' };
        Ok(TestDatabase { url: format!("{server}{sep}options[search_path]={schema}"), schema })
    }

    /// Connections of the server whose `application_name` is `app`: how many, and how many use TLS.
    pub async fn tls_connections(&self, app: &str) -> Result<(i64, i64), sqlx::Error> {
        let mut conn = PgConnection::connect(&self.url).await?;
        sqlx::query_as(
            "SELECT COUNT(*), COUNT(CASE WHEN s.ssl THEN 1 END) FROM pg_stat_activity a
             JOIN pg_stat_ssl s ON s.pid = a.pid WHERE a.application_name = $1",
        )
        .bind(app)
        .fetch_one(&mut conn)
        .await
    }

    /// Every row of every table in the schema, as text (for tests that look for what must never be stored).
    pub async fn dump(&self) -> Result<String, sqlx::Error> {
        let mut conn = PgConnection::connect(&self.url).await?;
        let tables: Vec<String> =
            sqlx::query_scalar("SELECT table_name::text FROM information_schema.tables WHERE table_schema = $1")
                .bind(&self.schema)
                .fetch_all(&mut conn)
                .await?;
        let mut out = String::new();
        for table in tables {
            // Table names come from the catalogue, quoted as identifiers.
            let rows: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                "SELECT t::text FROM {}.\"{}\" t",
                self.schema,
                table.replace('"', "\"\"")
            )))
            .fetch_all(&mut conn)
            .await?;
            for row in rows {
                out.push_str(&row);
                out.push('\n');
            }
        }
        conn.close().await?;
        Ok(out)
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let schema = std::mem::take(&mut self.schema);
        // Drop runs inside the test's runtime, which cannot be blocked on: a thread of its own does it.
        let dropped = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
            rt.block_on(async move {
                let mut admin = PgConnection::connect(&test_postgres_url()).await.ok()?;
                admin.execute(sqlx::AssertSqlSafe(format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))).await.ok()?;
                admin.close().await.ok()
            })
        })
        .join();
        if !matches!(dropped, Ok(Some(()))) {
            tracing::warn!("a test schema could not be dropped");
        }
    }
}
