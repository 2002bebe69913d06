//! Profiles of sessions: a session with `profile` starts from that storage state (loaded into its
//! context before its first navigation); one with `persistProfile` also holds the profile's one-writer
//! lock while it lives and saves its context's state back when it ends (not when its instance was lost).
//! Also the profile operations of the API: list, read, delete, export and import.

mod key;

pub use key::{ProfileKey, ProfileKeyError};

use crate::actor::internal;
use crate::manager::{SessionManager, Shared};
use std::time::Instant;
use webpilot_browser::{BrowserError, BrowserLease, OriginLog};
use webpilot_core::params::SessionParams;
use webpilot_core::profile::StorageState;
use webpilot_core::{ApiError, ErrorCode, SessionId, UserId};
use webpilot_store::{NewProfile, ProfileCaps, ProfileRecord};

/// Default cap on one profile (bytes, as stored).
pub const DEFAULT_MAX_PROFILE_BYTES: u64 = 20 * 1024 * 1024;
/// Default cap on all of one user's profiles (bytes, as stored).
pub const DEFAULT_MAX_USER_PROFILE_BYTES: u64 = 200 * 1024 * 1024;

/// The key profiles are sealed with, and their caps.
#[derive(Debug, Clone)]
pub struct ProfileSettings {
    pub key: ProfileKey,
    pub caps: ProfileCaps,
}

impl Default for ProfileSettings {
    fn default() -> Self {
        let cap = |b: u64| i64::try_from(b).unwrap_or(i64::MAX);
        ProfileSettings {
            key: ProfileKey::random(),
            caps: ProfileCaps {
                per_profile: cap(DEFAULT_MAX_PROFILE_BYTES),
                per_user: cap(DEFAULT_MAX_USER_PROFILE_BYTES),
            },
        }
    }
}

/// A live session's profile.
pub(crate) struct SessionProfile {
    pub name: String,
    /// Saved back when the session ends (the session holds the profile's lock).
    pub persist: bool,
    /// The origins the session's pages visited.
    pub log: OriginLog,
    /// The origins the profile held when loaded (their storage is read back too).
    pub loaded: Vec<String>,
}

fn in_use() -> ApiError {
    ApiError::new(
        ErrorCode::ProfileInUse,
        "another live session holds this profile with persistProfile; end it first, or open the profile without \
         persistProfile",
    )
}

/// Makes `session` the one writer of `user`'s profile `name`: 409 PROFILE_IN_USE when a live session is.
pub(crate) async fn claim(shared: &Shared, user: &UserId, name: &str, session: &SessionId) -> Result<(), ApiError> {
    claim_or(shared, user, name, session, in_use).await
}

/// [`claim`], answering `busy` when another writer holds the profile.
async fn claim_or(
    shared: &Shared,
    user: &UserId,
    name: &str,
    writer: &SessionId,
    busy: fn() -> ApiError,
) -> Result<(), ApiError> {
    match shared.store.lock_profile(user, name, writer).await {
        Ok(true) => Ok(()),
        Ok(false) => Err(busy()),
        Err(e) => Err(internal("locking a profile", e)),
    }
}

/// Lets go of `session`'s lock on `user`'s profile `name`.
pub(crate) async fn release(shared: &Shared, user: &UserId, name: &str, session: &SessionId) {
    if let Err(e) = shared.store.unlock_profile(user, name, session).await {
        tracing::warn!(session = %session, error = %e, "letting go of a profile lock failed");
    }
}

/// A browser for a new session, with its profile loaded when it has one. With `persistProfile` the
/// session first becomes the profile's one writer (409 PROFILE_IN_USE when another live session is), and
/// lets go again if the browser or the profile cannot be had.
pub(crate) async fn lease_with_profile(
    shared: &Shared,
    user: &UserId,
    params: &SessionParams,
    session: &SessionId,
) -> Result<(BrowserLease, Option<SessionProfile>), ApiError> {
    // Checked before anything is held: a proxy that cannot be used is the caller's 400.
    let allow = shared.pool.settings().egress_allow.clone();
    let routes = crate::proxies::routes(&params.proxies, &shared.config.proxies, &allow).await?;
    let writes = params.profile.as_deref().filter(|_| params.persist_profile);
    if let Some(name) = writes {
        claim(shared, user, name, session).await?;
    }
    let leased = match shared.pool.lease(params.limits.avoid_domains.clone()).await {
        Ok(lease) => {
            // The routes and the identity are in place before the context's first request (a profile's
            // load is one) and before the first page loads anything.
            lease.page().policy().set_routes(routes);
            lease.page().set_identity(params.identity.clone()).await.map(|()| lease)
        }
        Err(e) => Err(e),
    };
    let opened = match leased {
        Ok(lease) => match &params.profile {
            Some(name) => load(shared, user, name, params.persist_profile, &lease).await.map(|p| (lease, Some(p))),
            None => Ok((lease, None)),
        },
        Err(BrowserError::NoCapacity) => Err(ApiError::code(ErrorCode::NoInstancesAvailable)),
        Err(other) => {
            tracing::error!(error = %other, "preparing a browser for a session failed");
            Err(ApiError::new(ErrorCode::InstanceUnavailable, "the browser instance could not be prepared; retry"))
        }
    };
    if let (Err(_), Some(name)) = (&opened, writes) {
        release(shared, user, name, session).await;
    }
    opened
}

/// `user`'s profile `name` opened, when there is one.
async fn read_state(shared: &Shared, user: &UserId, name: &str) -> Result<Option<StorageState>, ApiError> {
    let sealed = shared.store.profile_sealed(user, name).await.map_err(|e| internal("reading a profile", e))?;
    let Some(sealed) = sealed else { return Ok(None) };
    let plain = shared.config.profiles.key.open(user, name, &sealed).map_err(|e| {
        tracing::error!(error = %e, "a profile could not be opened");
        ApiError::new(ErrorCode::InternalError, format!("the profile could not be opened: {e}"))
    })?;
    serde_json::from_slice(&plain).map(Some).map_err(|e| internal("reading a profile's content", e))
}

/// Loads `user`'s profile `name` (empty when there is none yet) into `lease`, before its first navigation.
pub(crate) async fn load(
    shared: &Shared,
    user: &UserId,
    name: &str,
    persist: bool,
    lease: &BrowserLease,
) -> Result<SessionProfile, ApiError> {
    let began = Instant::now();
    let log = lease.track_origins().await.map_err(|e| internal("following a session's origins", e))?;
    let state = read_state(shared, user, name).await?.unwrap_or_default();
    // A profile stored before imports were checked may never load: that is the profile's fault, not the
    // browser's, so it is said so (never 503 "retry").
    if let Err(why) = state.check_loadable() {
        return Err(ApiError::new(
            ErrorCode::InvalidParameter,
            format!(
                "the profile {name:?} cannot be loaded into a browser: {why}; import a valid one \
                 (PUT /profiles/{name}/export) or delete it"
            ),
        ));
    }
    lease.load_state(&state).await.map_err(|e| {
        tracing::error!(error = %e, "loading a profile into a browser context failed");
        ApiError::new(ErrorCode::InstanceUnavailable, "the profile could not be loaded into the browser; retry")
    })?;
    let elapsed = began.elapsed();
    metrics::histogram!("webpilot_profile_load_seconds").record(elapsed.as_secs_f64());
    tracing::info!(
        cookies = state.cookies.len(),
        origins = state.origins.len(),
        ms = elapsed.as_millis() as u64,
        "profile loaded"
    );
    Ok(SessionProfile { name: name.to_owned(), persist, log, loaded: state.origin_names() })
}

/// After the session's browser was replaced: its origins are followed in the new context (those seen
/// before are kept).
pub(crate) async fn follow_replacement(profile: Option<&mut SessionProfile>, lease: &BrowserLease) {
    let Some(profile) = profile else { return };
    match lease.track_origins().await {
        Ok(log) => {
            for origin in profile.log.origins() {
                log.add_origin(origin);
            }
            profile.log = log;
        }
        Err(e) => tracing::warn!(error = %e, "following the origins of a replaced browser failed"),
    }
}

/// Saves the state of `lease`'s context into `user`'s profile (at the end of a persistProfile session).
/// A save over a cap is refused and logged; the session ends anyway.
pub(crate) async fn save(shared: &Shared, user: &UserId, profile: &SessionProfile, lease: &BrowserLease) {
    let began = Instant::now();
    for url in lease.tab_urls().await {
        profile.log.add_url(&url);
    }
    let mut origins = profile.loaded.clone();
    for o in profile.log.origins() {
        if !origins.contains(&o) {
            origins.push(o);
        }
    }
    let (state, skipped) = match lease.save_state(&origins).await {
        Ok(read) => read,
        Err(e) => {
            tracing::warn!(error = %e, "reading the browser context for its profile failed; the profile is unchanged");
            return;
        }
    };
    if skipped > 0 {
        tracing::info!(skipped, "IndexedDB records that are not plain JSON data were not saved");
    }
    match store_state(shared, user, &profile.name, &state).await {
        Ok(record) => {
            let elapsed = began.elapsed();
            metrics::histogram!("webpilot_profile_save_seconds").record(elapsed.as_secs_f64());
            tracing::info!(
                bytes = record.bytes,
                cookies = record.cookies,
                origins = record.origins.len(),
                ms = elapsed.as_millis() as u64,
                "profile saved"
            );
        }
        Err(e) => tracing::warn!(error = %e.message, "the profile was not saved"),
    }
}

/// Seals and stores `state` as `user`'s profile `name`, under the caps (413 FILE_TOO_LARGE beyond).
async fn store_state(
    shared: &Shared,
    user: &UserId,
    name: &str,
    state: &StorageState,
) -> Result<ProfileRecord, ApiError> {
    let plain = serde_json::to_vec(state).map_err(|e| internal("writing a profile", e))?;
    let sealed = shared.config.profiles.key.seal(user, name, &plain);
    let origins = state.origin_names();
    let cookies = i64::try_from(state.cookies.len()).unwrap_or(i64::MAX);
    let profile = NewProfile { name, sealed: &sealed, origins: &origins, cookies };
    match shared.store.save_profile(user, profile, shared.config.profiles.caps).await {
        Ok(Ok(record)) => Ok(record),
        Ok(Err(refusal)) => Err(ApiError::new(ErrorCode::FileTooLarge, format!("the profile was refused: {refusal}"))),
        Err(e) => Err(internal("storing a profile", e)),
    }
}

fn not_found() -> ApiError {
    ApiError::code(ErrorCode::ProfileNotFound)
}

impl SessionManager {
    /// `user`'s profiles (never their content).
    pub async fn list_profiles(&self, user: &UserId) -> Result<Vec<ProfileRecord>, ApiError> {
        self.shared().store.list_profiles(user).await.map_err(|e| internal("listing profiles", e))
    }

    /// One profile of `user` (never its content); another user's is not found.
    pub async fn profile(&self, user: &UserId, name: &str) -> Result<ProfileRecord, ApiError> {
        let record = self.shared().store.profile_record(user, name).await;
        record.map_err(|e| internal("reading a profile", e))?.ok_or_else(not_found)
    }

    /// Deletes one profile of `user`. A live session writing it saves it again when it ends.
    pub async fn delete_profile(&self, user: &UserId, name: &str) -> Result<(), ApiError> {
        match self.shared().store.delete_profile(user, name).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(not_found()),
            Err(e) => Err(internal("deleting a profile", e)),
        }
    }

    /// The decrypted storage state of one profile of `user`.
    pub async fn export_profile(&self, user: &UserId, name: &str) -> Result<StorageState, ApiError> {
        read_state(self.shared(), user, name).await?.ok_or_else(not_found)
    }

    /// Stores `state` as `user`'s profile `name` (created or replaced): 409 PROFILE_IN_USE while a live
    /// session writes it.
    pub async fn import_profile(
        &self,
        user: &UserId,
        name: &str,
        state: &StorageState,
    ) -> Result<ProfileRecord, ApiError> {
        let shared = self.shared();
        // The import is the writer while it runs (a crash leaves a lock that goes stale by itself).
        let writer = SessionId::from_string(format!("import_{}", hex::encode(rand::random::<[u8; 12]>())));
        let busy = || {
            ApiError::new(
                ErrorCode::ProfileInUse,
                "this profile is being written right now, by another import or by a live session with \
                 persistProfile; retry once that is done",
            )
        };
        claim_or(shared, user, name, &writer, busy).await?;
        let stored = store_state(shared, user, name, state).await;
        release(shared, user, name, &writer).await;
        stored
    }
}
