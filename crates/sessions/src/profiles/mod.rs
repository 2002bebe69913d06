//! Profiles of sessions: a session with `profile` starts from that storage state (loaded into its
//! context before its first navigation); one with `persistProfile` also holds the profile's one-writer
//! lock while it lives and saves its context's state back when it ends (not when its instance was lost).
//! Also the profile operations of the API: list, read, delete, export and import.

use crate::error::SessionError;
mod key;

pub use key::{ProfileKey, ProfileKeyError};

use std::time::Instant;
use webpilot_browser::{BrowserLease, OriginLog};
use webpilot_core::profile::StorageState;
use webpilot_core::{ErrorCode, SessionId, UserId};
use webpilot_store::{NewProfile, ProfileCaps, ProfileRecord, Store};

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

/// The users' stored profiles: where they are kept, sealed with which key, under which caps.
#[derive(Clone)]
pub struct Profiles {
    store: Store,
    settings: ProfileSettings,
}

/// A live session's profile, as a part its actor owns.
pub(crate) struct SessionProfile {
    profiles: Profiles,
    user: UserId,
    session: SessionId,
    name: String,
    /// Saved back when the session ends (the session holds the profile's lock).
    persist: bool,
    /// The origins the session's pages visited.
    log: OriginLog,
    /// The origins the profile held when loaded (their storage is read back too).
    loaded: Vec<String>,
}

fn in_use() -> SessionError {
    SessionError::new(
        ErrorCode::ProfileInUse,
        "another live session holds this profile with persistProfile; end it first, or open the profile without \
         persistProfile",
    )
}

fn not_found() -> SessionError {
    SessionError::refused(ErrorCode::ProfileNotFound)
}

impl Profiles {
    pub(crate) fn new(store: Store, settings: ProfileSettings) -> Self {
        Profiles { store, settings }
    }

    /// The caps profiles are held to.
    pub fn caps(&self) -> ProfileCaps {
        self.settings.caps
    }

    /// Makes `session` the one writer of `user`'s profile `name`: 409 PROFILE_IN_USE when a live session is.
    pub(crate) async fn claim(&self, user: &UserId, name: &str, session: &SessionId) -> Result<(), SessionError> {
        self.claim_or(user, name, session, in_use).await
    }

    /// [`Self::claim`], answering `busy` when another writer holds the profile.
    async fn claim_or(
        &self,
        user: &UserId,
        name: &str,
        writer: &SessionId,
        busy: fn() -> SessionError,
    ) -> Result<(), SessionError> {
        match self.store.lock_profile(user, name, writer).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(busy()),
            Err(e) => Err(SessionError::internal("locking a profile", e)),
        }
    }

    /// Lets go of `session`'s lock on `user`'s profile `name`.
    pub(crate) async fn release(&self, user: &UserId, name: &str, session: &SessionId) {
        if let Err(e) = self.store.unlock_profile(user, name, session).await {
            tracing::warn!(session = %session, error = %e, "letting go of a profile lock failed");
        }
    }

    /// `user`'s profile `name` opened, when there is one.
    async fn read_state(&self, user: &UserId, name: &str) -> Result<Option<StorageState>, SessionError> {
        let sealed =
            self.store.profile_sealed(user, name).await.map_err(|e| SessionError::internal("reading a profile", e))?;
        let Some(sealed) = sealed else { return Ok(None) };
        let plain = self.settings.key.open(user, name, &sealed).map_err(|e| {
            tracing::error!(error = %e, "a profile could not be opened");
            SessionError::new(ErrorCode::InternalError, format!("the profile could not be opened: {e}"))
        })?;
        serde_json::from_slice(&plain).map(Some).map_err(|e| SessionError::internal("reading a profile's content", e))
    }

    /// Loads `user`'s profile `name` (empty when there is none yet) into `lease`, before its first
    /// navigation, for `session`.
    pub(crate) async fn load(
        &self,
        (user, session): (&UserId, &SessionId),
        name: &str,
        persist: bool,
        lease: &BrowserLease,
    ) -> Result<SessionProfile, SessionError> {
        let began = Instant::now();
        let log =
            lease.track_origins().await.map_err(|e| SessionError::internal("following a session's origins", e))?;
        let state = self.read_state(user, name).await?.unwrap_or_default();
        // A profile stored before imports were checked may never load: that is the profile's fault, not the
        // browser's, so it is said so (never 503 "retry").
        if let Err(why) = state.check_loadable() {
            return Err(SessionError::new(
                ErrorCode::InvalidParameter,
                format!(
                    "the profile {name:?} cannot be loaded into a browser: {why}; import a valid one \
                     (PUT /profiles/{name}/export) or delete it"
                ),
            ));
        }
        lease.load_state(&state).await.map_err(|e| {
            tracing::error!(error = %e, "loading a profile into a browser context failed");
            SessionError::new(ErrorCode::InstanceUnavailable, "the profile could not be loaded into the browser; retry")
        })?;
        let elapsed = began.elapsed();
        metrics::histogram!("webpilot_profile_load_seconds").record(elapsed.as_secs_f64());
        tracing::info!(
            cookies = state.cookies.len(),
            origins = state.origins.len(),
            ms = elapsed.as_millis() as u64,
            "profile loaded"
        );
        Ok(SessionProfile {
            profiles: self.clone(),
            user: user.clone(),
            session: session.clone(),
            name: name.to_owned(),
            persist,
            log,
            loaded: state.origin_names(),
        })
    }

    /// Seals and stores `state` as `user`'s profile `name`, under the caps (413 FILE_TOO_LARGE beyond).
    async fn store_state(
        &self,
        user: &UserId,
        name: &str,
        state: &StorageState,
    ) -> Result<ProfileRecord, SessionError> {
        let plain = serde_json::to_vec(state).map_err(|e| SessionError::internal("writing a profile", e))?;
        let sealed = self.settings.key.seal(user, name, &plain);
        let origins = state.origin_names();
        let cookies = i64::try_from(state.cookies.len()).unwrap_or(i64::MAX);
        let profile = NewProfile { name, sealed: &sealed, origins: &origins, cookies };
        match self.store.save_profile(user, profile, self.settings.caps).await {
            Ok(Ok(record)) => Ok(record),
            Ok(Err(refusal)) => {
                Err(SessionError::new(ErrorCode::FileTooLarge, format!("the profile was refused: {refusal}")))
            }
            Err(e) => Err(SessionError::internal("storing a profile", e)),
        }
    }

    /// `user`'s profiles (never their content).
    pub async fn list(&self, user: &UserId) -> Result<Vec<ProfileRecord>, SessionError> {
        self.store.list_profiles(user).await.map_err(|e| SessionError::internal("listing profiles", e))
    }

    /// One profile of `user` (never its content); another user's is not found.
    pub async fn get(&self, user: &UserId, name: &str) -> Result<ProfileRecord, SessionError> {
        let record = self.store.profile_record(user, name).await;
        record.map_err(|e| SessionError::internal("reading a profile", e))?.ok_or_else(not_found)
    }

    /// Deletes one profile of `user`. A live session writing it saves it again when it ends.
    pub async fn delete(&self, user: &UserId, name: &str) -> Result<(), SessionError> {
        match self.store.delete_profile(user, name).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(not_found()),
            Err(e) => Err(SessionError::internal("deleting a profile", e)),
        }
    }

    /// The decrypted storage state of one profile of `user`.
    pub async fn export(&self, user: &UserId, name: &str) -> Result<StorageState, SessionError> {
        self.read_state(user, name).await?.ok_or_else(not_found)
    }

    /// Stores `state` as `user`'s profile `name` (created or replaced): 409 PROFILE_IN_USE while a live
    /// session writes it.
    pub async fn import(&self, user: &UserId, name: &str, state: &StorageState) -> Result<ProfileRecord, SessionError> {
        // The import is the writer while it runs (a crash leaves a lock that goes stale by itself).
        let writer = SessionId::from_string(format!("import_{}", hex::encode(rand::random::<[u8; 12]>())));
        let busy = || {
            SessionError::new(
                ErrorCode::ProfileInUse,
                "this profile is being written right now, by another import or by a live session with \
                 persistProfile; retry once that is done",
            )
        };
        self.claim_or(user, name, &writer, busy).await?;
        let stored = self.store_state(user, name, state).await;
        self.release(user, name, &writer).await;
        stored
    }
}

impl SessionProfile {
    /// After the session's browser was replaced: its origins are followed in the new context (those seen
    /// before are kept).
    pub async fn follow_replacement(&mut self, lease: &BrowserLease) {
        match lease.track_origins().await {
            Ok(log) => {
                for origin in self.log.origins() {
                    log.add_origin(origin);
                }
                self.log = log;
            }
            Err(e) => tracing::warn!(error = %e, "following the origins of a replaced browser failed"),
        }
    }

    /// At the session's end: a persistProfile session saves its context's state into the profile (when
    /// `readable`: never from a lost instance) and lets go of the profile's lock; other sessions do nothing.
    pub async fn close(self, lease: &BrowserLease, readable: bool) {
        if !self.persist {
            return;
        }
        if readable {
            self.save(lease).await;
        }
        self.profiles.release(&self.user, &self.name, &self.session).await;
    }

    /// Saves the state of `lease`'s context into the profile. A save over a cap is refused and logged; the
    /// session ends anyway.
    async fn save(&self, lease: &BrowserLease) {
        let began = Instant::now();
        for url in lease.tab_urls().await {
            self.log.add_url(&url);
        }
        let mut origins = self.loaded.clone();
        for o in self.log.origins() {
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
        match self.profiles.store_state(&self.user, &self.name, &state).await {
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
            Err(e) => tracing::warn!(error = %e, "the profile was not saved"),
        }
    }
}
