//! Files set on a page's file inputs: only files of the session's own area, which the session puts in a
//! directory the browser may read (`files` inside the context's download directory) under their names.
//! A name is checked (no separator, no `..`) before it becomes a path; never is a host path taken.

use crate::error::{within, BrowserError};
use crate::page::SessionPage;
use chromiumoxide::cdp::browser_protocol::dom::SetFileInputFilesParams;
use chromiumoxide::cdp::js_protocol::runtime::EvaluateParams;
use std::path::PathBuf;
use webpilot_core::files::check_name;
use webpilot_core::geometry::PagePoint;

/// The directory, inside the context's download directory, holding the files inputs may be given.
pub(crate) const FILES_DIR: &str = "files";

/// Finds the file input labelled `label` (its label's text, name, id, aria-label or title; exact, then
/// contained), else the only file input of the page.
const FIND_FILE_INPUT: &str = r#"((want) => {
  want = want.trim().toLowerCase();
  const inputs = [...document.querySelectorAll('input[type=file]')];
  const names = (i) => [...(i.labels || [])].map((l) => l.textContent)
    .concat([i.name, i.id, i.getAttribute('aria-label'), i.title]).map((s) => (s || '').trim().toLowerCase());
  return inputs.find((i) => names(i).includes(want))
    || inputs.find((i) => names(i).some((n) => n && (n.includes(want) || want.includes(n))))
    || (inputs.length === 1 ? inputs[0] : null);
})"#;

/// The file input an element is, labels, or holds (an agent's element index often names the label of a
/// hidden input).
const FILE_INPUT_OF: &str = r#"((el) => {
  if (el && el.tagName === 'LABEL' && el.control) el = el.control;
  if (el && !(el.tagName === 'INPUT' && el.type === 'file')) el = el.querySelector && el.querySelector('input[type=file]');
  return el && el.tagName === 'INPUT' && el.type === 'file' ? el : null;
})"#;

/// The file input at a page point (or inside the label there).
const FILE_INPUT_AT: &str = r#"((x, y) => {
  let el = document.elementFromPoint(x, y);
  if (el && el.tagName === 'LABEL' && el.control) el = el.control;
  if (el && !(el.tagName === 'INPUT' && el.type === 'file')) el = el.querySelector && el.querySelector('input[type=file]');
  return el && el.tagName === 'INPUT' && el.type === 'file' ? el : null;
})"#;

impl SessionPage {
    /// Where the session's files are put for the page's file inputs; none on a remote browser.
    pub fn files_dir(&self) -> Option<&std::path::Path> {
        self.inner.files_dir.as_deref()
    }

    /// Sets the session's file `name` on the file input labelled `label`.
    pub async fn upload_into(&self, label: &str, name: &str) -> Result<(), BrowserError> {
        let path = self.file_path(name)?;
        let found = self.element_by(&format!("{FIND_FILE_INPUT}({})", js(label))).await?;
        let object = found.ok_or_else(|| BrowserError::ElementNotFound(format!("no file input {label:?}")))?;
        self.set_files(object, path).await
    }

    /// Sets the session's file `name` on the file input at `at` (page coordinates).
    pub async fn upload_at(&self, at: PagePoint, name: &str) -> Result<(), BrowserError> {
        let path = self.file_path(name)?;
        let found = self.element_by(&format!("{FILE_INPUT_AT}({}, {})", at.x, at.y)).await?;
        let object = found.ok_or_else(|| BrowserError::ElementNotFound("no file input at that point".into()))?;
        self.set_files(object, path).await
    }

    /// Sets the session's file `name` on the file input that the element with observation index `index` is,
    /// labels or holds.
    pub async fn upload_index(&self, index: u32, name: &str) -> Result<(), BrowserError> {
        let path = self.file_path(name)?;
        let css = self.css_path(index).await?;
        let found = self.element_by(&format!("{FILE_INPUT_OF}(document.querySelector({}))", js(&css))).await?;
        let object = found.ok_or_else(|| BrowserError::ElementNotFound(format!("[{index}] is no file input")))?;
        self.set_files(object, path).await
    }

    /// The path of the session's file `name`, which must be there already.
    fn file_path(&self, name: &str) -> Result<PathBuf, BrowserError> {
        check_name(name).map_err(|e| BrowserError::ElementNotFound(format!("file {name:?}: {e}")))?;
        let dir = self
            .inner
            .files_dir
            .as_ref()
            .ok_or_else(|| BrowserError::Cdp("files cannot be uploaded through a remote browser".into()))?;
        let path = dir.join(name);
        match path.is_file() {
            true => Ok(path),
            false => Err(BrowserError::ElementNotFound(format!("the session has no file {name:?}"))),
        }
    }

    /// The remote object id of the element `expression` evaluates to, if any.
    async fn element_by(&self, expression: &str) -> Result<Option<String>, BrowserError> {
        let page = self.page()?;
        let mut params = EvaluateParams::new(expression);
        params.return_by_value = Some(false);
        let res = within(self.cdp_timeout(), "find a file input", page.execute(params)).await?;
        Ok(res.result.result.object_id.clone().map(|id| id.inner().clone()))
    }

    async fn set_files(&self, object: String, path: PathBuf) -> Result<(), BrowserError> {
        let page = self.page()?;
        let mut params = SetFileInputFilesParams::new(vec![path.display().to_string()]);
        params.object_id = Some(object.into());
        within(self.cdp_timeout(), "set a file input", page.execute(params)).await?;
        Ok(())
    }
}

fn js(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}
