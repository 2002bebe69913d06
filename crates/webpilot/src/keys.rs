//! The service's root keys: the current one (`--profile-key`, or `profile.key` in the data directory)
//! and the older ones, and what is sealed under them (profiles, the database's secrets).

use crate::config::ServeConfig;
use crate::StartError;
use webpilot_sessions::{ProfileKey, ProfileSettings};
use webpilot_store::ProfileCaps;

/// The service's root key: `--profile-key`, else `profile.key` in the data directory (made on first
/// start, 0600), and the older keys that still open what they sealed. Profiles are sealed under it, and the
/// secrets the database keeps under a key derived from it (`webpilot_store::Sealer`).
pub(crate) struct RootKeys {
    current: String,
    previous: Vec<String>,
}

impl RootKeys {
    pub fn load(serve: &ServeConfig, data_dir: &std::path::Path) -> Result<RootKeys, StartError> {
        let current = match serve.profile_key.as_deref().map(str::trim).filter(|k| !k.is_empty()) {
            Some(hex) => hex.to_owned(),
            None => {
                let path = data_dir.join("profile.key");
                let text = webpilot_core::secret_file::read_or_create(&path, rand::random())
                    .map_err(webpilot_sessions::ProfileKeyError::File)?;
                text.trim().to_owned()
            }
        };
        let previous =
            serve.profile_previous_keys.iter().map(|k| k.trim().to_owned()).filter(|k| !k.is_empty()).collect();
        Ok(RootKeys { current, previous })
    }

    pub fn sealer(&self) -> Result<webpilot_store::Sealer, StartError> {
        let sealer = webpilot_store::Sealer::from_hex(&self.current, self.previous.iter().map(String::as_str));
        sealer.map_err(|_| StartError::ProfileKey(webpilot_sessions::ProfileKeyError::BadKey))
    }

    /// The profile key and caps.
    pub fn profiles(&self, serve: &ServeConfig) -> Result<ProfileSettings, StartError> {
        let key = ProfileKey::from_hex(&self.current)?;
        let cap = |b: u64| i64::try_from(b).unwrap_or(i64::MAX);
        Ok(ProfileSettings {
            key: key.with_previous(self.previous.iter().map(String::as_str))?,
            caps: ProfileCaps {
                per_profile: cap(serve.max_profile_bytes),
                per_user: cap(serve.max_user_profile_bytes),
            },
        })
    }
}
