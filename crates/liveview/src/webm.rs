//! A streaming WebM muxer for one VP8 track (over `webm-iterable`): the EBML header, a Segment of
//! unknown size with its Info and Tracks, then Clusters of unknown size holding SimpleBlocks. Nothing is
//! ever rewritten, so a file cut off at any point plays up to its last whole block; each keyframe opens
//! a Cluster, which is what players seek to.

use std::io::Write;
use webm_iterable::errors::TagWriterError;
use webm_iterable::matroska_spec::{Master, MatroskaSpec, SimpleBlock};
use webm_iterable::{WebmWriter, WriteOptions};

/// Why a frame could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WebmError {
    #[error("writing WebM: {0}")]
    Write(#[from] TagWriterError),
    #[error("a frame at {at_ms} ms comes before the previous one at {last_ms} ms")]
    Backwards { at_ms: u64, last_ms: u64 },
}

/// The longest a Cluster may span: block times are 16-bit offsets from its start (in ms).
const MAX_CLUSTER_SPAN_MS: u64 = 30_000;

/// Writes VP8 frames into a WebM stream as they come.
pub struct WebmMuxer<W: Write> {
    writer: WebmWriter<W>,
    /// The start (ms) of the open Cluster.
    cluster: Option<u64>,
    last_ms: u64,
}

impl<W: Write> WebmMuxer<W> {
    /// Writes the header of a `width` x `height` VP8 video (times in milliseconds) to `dest`.
    pub fn new(dest: W, width: u32, height: u32) -> Result<Self, WebmError> {
        let mut writer = WebmWriter::new(dest);
        writer.write(&MatroskaSpec::Ebml(Master::Full(vec![
            MatroskaSpec::EbmlVersion(1),
            MatroskaSpec::EbmlReadVersion(1),
            MatroskaSpec::EbmlMaxIdLength(4),
            MatroskaSpec::EbmlMaxSizeLength(8),
            MatroskaSpec::DocType("webm".into()),
            MatroskaSpec::DocTypeVersion(4),
            MatroskaSpec::DocTypeReadVersion(2),
        ])))?;
        writer.write_advanced(&MatroskaSpec::Segment(Master::Start), WriteOptions::is_unknown_sized_element())?;
        writer.write(&MatroskaSpec::Info(Master::Full(vec![
            MatroskaSpec::TimestampScale(1_000_000),
            MatroskaSpec::MuxingApp("webpilot".into()),
            MatroskaSpec::WritingApp("webpilot".into()),
        ])))?;
        writer.write(&MatroskaSpec::Tracks(Master::Full(vec![MatroskaSpec::TrackEntry(Master::Full(vec![
            MatroskaSpec::TrackNumber(1),
            MatroskaSpec::TrackUID(1),
            MatroskaSpec::TrackType(1),
            MatroskaSpec::FlagLacing(0),
            MatroskaSpec::CodecID("V_VP8".into()),
            MatroskaSpec::Video(Master::Full(vec![
                MatroskaSpec::PixelWidth(u64::from(width)),
                MatroskaSpec::PixelHeight(u64::from(height)),
            ])),
        ]))])))?;
        Ok(WebmMuxer { writer, cluster: None, last_ms: 0 })
    }

    /// Appends one encoded frame shown from `at_ms` on; a keyframe starts a new Cluster. The first
    /// frame must be a keyframe for the file to play from its start.
    pub fn write_frame(&mut self, data: &[u8], at_ms: u64, key: bool) -> Result<(), WebmError> {
        if self.cluster.is_some() && at_ms < self.last_ms {
            return Err(WebmError::Backwards { at_ms, last_ms: self.last_ms });
        }
        let start = match self.cluster {
            Some(start) if !key && at_ms - start < MAX_CLUSTER_SPAN_MS => start,
            open => {
                if open.is_some() {
                    self.writer.write(&MatroskaSpec::Cluster(Master::End))?;
                }
                self.writer
                    .write_advanced(&MatroskaSpec::Cluster(Master::Start), WriteOptions::is_unknown_sized_element())?;
                self.writer.write(&MatroskaSpec::Timestamp(at_ms))?;
                self.cluster = Some(at_ms);
                at_ms
            }
        };
        // Below MAX_CLUSTER_SPAN_MS, so it fits.
        let offset = i16::try_from(at_ms - start).unwrap_or(i16::MAX);
        let block = SimpleBlock::new_uncheked(data, 1, offset, false, None, false, key);
        self.writer.write(&MatroskaSpec::from(block))?;
        self.last_ms = at_ms;
        Ok(())
    }

    /// The destination, for flushing or syncing it.
    pub fn get_mut(&mut self) -> &mut W {
        self.writer.get_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use webm_iterable::WebmIterator;

    #[test]
    fn frames_land_in_clusters_opened_by_keyframes() {
        let mut out = Vec::new();
        let mut mux = WebmMuxer::new(&mut out, 64, 48).expect("header");
        mux.write_frame(&[1, 2, 3], 0, true).expect("key");
        mux.write_frame(&[4], 100, false).expect("delta");
        mux.write_frame(&[5, 6], 2_100, true).expect("key");
        mux.write_frame(&[7], 40_000, false).expect("a late delta opens a cluster too");
        assert!(matches!(mux.write_frame(&[8], 10, false), Err(WebmError::Backwards { .. })));
        let tags: Vec<MatroskaSpec> = WebmIterator::new(out.as_slice(), &[]).map(|t| t.expect("tag")).collect();
        let clusters = tags.iter().filter(|t| matches!(t, MatroskaSpec::Cluster(Master::Start))).count();
        let times: Vec<u64> =
            tags.iter().filter_map(|t| if let MatroskaSpec::Timestamp(ms) = t { Some(*ms) } else { None }).collect();
        let blocks: Vec<(Vec<u8>, bool, i16)> = tags
            .iter()
            .filter_map(|t| SimpleBlock::try_from(t).ok())
            .map(|b| (b.raw_frame_data().to_vec(), b.keyframe, b.timestamp))
            .collect();
        assert_eq!(clusters, 3);
        assert_eq!(times, vec![0, 2_100, 40_000]);
        assert_eq!(
            blocks,
            vec![(vec![1, 2, 3], true, 0), (vec![4], false, 100), (vec![5, 6], true, 0), (vec![7], false, 0)]
        );
        assert!(tags.iter().any(|t| matches!(t, MatroskaSpec::CodecID(c) if c == "V_VP8")));
    }
}
