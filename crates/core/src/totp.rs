//! One-time codes (RFC 6238 TOTP over RFC 4226 HOTP): a `totp` secret holds a base32 seed, and the code
//! valid at the moment of typing is computed here. Pure: the time is an argument.

use hmac::{Hmac, Mac};
use std::fmt;

/// Digits a code may have.
pub const DIGITS: [u32; 2] = [6, 8];
/// Default and bounds of the time step (seconds).
pub const DEFAULT_PERIOD: u64 = 30;
pub const MAX_PERIOD: u64 = 300;
/// Shortest and longest seed (bytes once decoded): RFC 4226 asks for at least 128 bits; 10 bytes (80 bits)
/// is what many sites still hand out, so that is the floor.
pub const MIN_SEED_BYTES: usize = 10;
pub const MAX_SEED_BYTES: usize = 128;

/// The hash of the HMAC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    Sha1,
    Sha256,
    Sha512,
}

impl Algorithm {
    pub fn parse(raw: &str) -> Option<Self> {
        match raw.to_ascii_uppercase().replace('-', "").as_str() {
            "SHA1" => Some(Algorithm::Sha1),
            "SHA256" => Some(Algorithm::Sha256),
            "SHA512" => Some(Algorithm::Sha512),
            _ => None,
        }
    }
}

/// A TOTP generator: seed, digits, period and hash. Its `Debug` never shows the seed.
#[derive(Clone, PartialEq, Eq)]
pub struct Totp {
    seed: Vec<u8>,
    /// The seed as the client wrote it (normalised: upper case, no spaces), masked like a value.
    text: String,
    digits: u32,
    period: u64,
    algorithm: Algorithm,
}

impl fmt::Debug for Totp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Totp")
            .field("seed", &"<redacted>")
            .field("digits", &self.digits)
            .field("period", &self.period)
            .field("algorithm", &self.algorithm)
            .finish()
    }
}

/// Why a seed or its settings were refused (the message never holds the seed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TotpError {
    #[error("totp must be a base32 seed (letters A-Z and digits 2-7) of {MIN_SEED_BYTES} to {MAX_SEED_BYTES} bytes")]
    Seed,
    #[error("digits must be 6 or 8")]
    Digits,
    #[error("period must be 1 to {MAX_PERIOD} seconds")]
    Period,
}

impl Totp {
    /// A generator for the base32 `seed` (case, spaces, dashes and `=` padding ignored).
    pub fn new(seed: &str, digits: u32, period: u64, algorithm: Algorithm) -> Result<Totp, TotpError> {
        if !DIGITS.contains(&digits) {
            return Err(TotpError::Digits);
        }
        if !(1..=MAX_PERIOD).contains(&period) {
            return Err(TotpError::Period);
        }
        let text: String = seed
            .chars()
            .filter(|c| !c.is_whitespace() && *c != '-' && *c != '=')
            .collect::<String>()
            .to_ascii_uppercase();
        let bytes = data_encoding::BASE32_NOPAD.decode(text.as_bytes()).map_err(|_| TotpError::Seed)?;
        if !(MIN_SEED_BYTES..=MAX_SEED_BYTES).contains(&bytes.len()) {
            return Err(TotpError::Seed);
        }
        Ok(Totp { seed: bytes, text, digits, period, algorithm })
    }

    /// The seed as text (for masking).
    pub fn seed_text(&self) -> &str {
        &self.text
    }

    /// The code valid at `unix_seconds`.
    pub fn code_at(&self, unix_seconds: u64) -> String {
        self.hotp(unix_seconds / self.period)
    }

    /// RFC 4226: HMAC of the big-endian counter, dynamic truncation, modulo 10^digits.
    fn hotp(&self, counter: u64) -> String {
        let msg = counter.to_be_bytes();
        let mac = match self.algorithm {
            Algorithm::Sha1 => mac::<Hmac<sha1::Sha1>>(&self.seed, &msg),
            Algorithm::Sha256 => mac::<Hmac<sha2::Sha256>>(&self.seed, &msg),
            Algorithm::Sha512 => mac::<Hmac<sha2::Sha512>>(&self.seed, &msg),
        };
        let offset = usize::from(mac.last().copied().unwrap_or(0) & 0x0f);
        let word =
            mac.get(offset..offset + 4).map(|b| u32::from_be_bytes([b[0] & 0x7f, b[1], b[2], b[3]])).unwrap_or(0);
        let code = word % 10u32.pow(self.digits);
        format!("{code:0width$}", width = self.digits as usize)
    }
}

fn mac<M: Mac + hmac::digest::KeyInit>(key: &[u8], msg: &[u8]) -> Vec<u8> {
    // HMAC takes a key of any length, so this cannot fail.
    match <M as Mac>::new_from_slice(key) {
        Ok(mut mac) => {
            mac.update(msg);
            mac.finalize().into_bytes().to_vec()
        }
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6238 appendix B: the ASCII seeds "12345678901234567890" (SHA1), its 32-byte (SHA256) and 64-byte
    /// (SHA512) extensions, eight digits, 30 s steps.
    #[test]
    fn rfc_6238_test_vectors() {
        let seed = |n: usize| data_encoding::BASE32.encode(&b"1234567890".repeat(7)[..n]);
        let sha1 = Totp::new(&seed(20), 8, 30, Algorithm::Sha1).unwrap();
        let sha256 = Totp::new(&seed(32), 8, 30, Algorithm::Sha256).unwrap();
        let sha512 = Totp::new(&seed(64), 8, 30, Algorithm::Sha512).unwrap();
        let table = [
            (59, "94287082", "46119246", "90693936"),
            (1111111109, "07081804", "68084774", "25091201"),
            (1111111111, "14050471", "67062674", "99943326"),
            (1234567890, "89005924", "91819424", "93441116"),
            (2000000000, "69279037", "90698825", "38618901"),
            (20000000000, "65353130", "77737706", "47863826"),
        ];
        for (t, a, b, c) in table {
            assert_eq!(
                (sha1.code_at(t).as_str(), sha256.code_at(t).as_str(), sha512.code_at(t).as_str()),
                (a, b, c),
                "{t}"
            );
        }
        let six = Totp::new(&seed(20), 6, 30, Algorithm::Sha1).unwrap();
        assert_eq!(six.code_at(59), "287082");
    }

    #[test]
    fn seeds_are_read_loosely_and_refused_clearly() {
        let a = Totp::new("jbsw y3dp-ehpk 3pxp====", 6, 30, Algorithm::Sha1).unwrap();
        assert_eq!(a.seed_text(), "JBSWY3DPEHPK3PXP");
        assert!(!format!("{a:?}").contains("JBSW"));
        for bad in ["", "not base32!", "JBSWY3DP", "JBSWY3DPEHPK3PX1"] {
            assert_eq!(Totp::new(bad, 6, 30, Algorithm::Sha1).unwrap_err(), TotpError::Seed, "{bad}");
        }
        assert_eq!(Totp::new("JBSWY3DPEHPK3PXP", 7, 30, Algorithm::Sha1).unwrap_err(), TotpError::Digits);
        assert_eq!(Totp::new("JBSWY3DPEHPK3PXP", 6, 0, Algorithm::Sha1).unwrap_err(), TotpError::Period);
        assert_eq!(Algorithm::parse("sha-256"), Some(Algorithm::Sha256));
        assert_eq!(Algorithm::parse("md5"), None);
    }
}
