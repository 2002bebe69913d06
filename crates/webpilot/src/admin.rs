//! Admin commands run against the store directly: users, API keys, balances.

use clap::Subcommand;
use webpilot_core::usage::{micros_to_usd, usd_to_micros};
use webpilot_core::{KeyId, UserId};
use webpilot_store::{now_ms, Store, StoreError};

#[derive(Debug, Subcommand)]
pub enum UsersCmd {
    /// Creates a user and prints its id.
    Create {
        #[arg(long)]
        name: String,
        /// Starting balance in USD.
        #[arg(long, default_value_t = 0.0)]
        balance: f64,
    },
    /// Lists users with their balances.
    List,
    /// Deactivates a user: its keys then get 403.
    Deactivate {
        #[arg(long)]
        user: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeysCmd {
    /// Creates an API key and prints it (shown only this once).
    Create {
        #[arg(long)]
        user: String,
        #[arg(long, default_value = "default")]
        name: String,
        /// Days until the key expires (never when absent).
        #[arg(long)]
        expires_in_days: Option<u32>,
    },
    /// Revokes a key by its id.
    Revoke {
        #[arg(long)]
        key: String,
    },
    /// Lists a user's keys (ids and prefixes, never the keys).
    List {
        #[arg(long)]
        user: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum BalanceCmd {
    /// Adds USD to a user's balance (negative to take away) and prints the new balance.
    Add {
        #[arg(long)]
        user: String,
        #[arg(long, allow_hyphen_values = true)]
        amount: f64,
    },
}

pub async fn users(store: &Store, cmd: UsersCmd) -> Result<(), StoreError> {
    match cmd {
        UsersCmd::Create { name, balance } => {
            let u = store.create_user(&name, usd_to_micros(balance)).await?;
            println!("{}", u.id);
        }
        UsersCmd::List => {
            for u in store.list_users().await? {
                let status = if u.is_active() { "active" } else { "deactivated" };
                println!("{}\t{}\t{:.6}\t{status}", u.id, u.name, micros_to_usd(u.balance_micros));
            }
        }
        UsersCmd::Deactivate { user } => {
            store.deactivate_user(&UserId::from_string(user)).await?;
            println!("deactivated");
        }
    }
    Ok(())
}

pub async fn keys(store: &Store, cmd: KeysCmd) -> Result<(), StoreError> {
    match cmd {
        KeysCmd::Create { user, name, expires_in_days } => {
            let expires = expires_in_days.map(|d| now_ms() + i64::from(d) * 86_400_000);
            let (rec, key) = store.create_api_key(&UserId::from_string(user), &name, expires).await?;
            eprintln!("key id {} (store the key now: it is not shown again)", rec.id);
            println!("{key}");
        }
        KeysCmd::Revoke { key } => {
            store.revoke_api_key(&KeyId::from_string(key)).await?;
            println!("revoked");
        }
        KeysCmd::List { user } => {
            for k in store.list_api_keys(&UserId::from_string(user)).await? {
                let status = if k.revoked_at.is_some() {
                    "revoked"
                } else if k.expires_at.is_some_and(|e| e <= now_ms()) {
                    "expired"
                } else {
                    "active"
                };
                println!("{}\t{}…\t{}\t{status}", k.id, k.prefix, k.name);
            }
        }
    }
    Ok(())
}

pub async fn balance(store: &Store, cmd: BalanceCmd) -> Result<(), StoreError> {
    match cmd {
        BalanceCmd::Add { user, amount } => {
            let b = store.add_balance(&UserId::from_string(user), usd_to_micros(amount)).await?;
            println!("{:.6}", micros_to_usd(b));
        }
    }
    Ok(())
}
