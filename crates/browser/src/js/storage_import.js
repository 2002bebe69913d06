// Writes a saved origin state into this origin: its localStorage entries, and its IndexedDB databases
// (stores and indexes made as saved, records put). Called with `{origin, localStorage, indexedDB}`.
async (state) => {
  if (location.origin !== state.origin) return { wrongOrigin: location.origin };
  for (const item of state.localStorage || []) localStorage.setItem(item.name, item.value);
  for (const d of state.indexedDB || []) {
    const stores = d.stores || [];
    const db = await new Promise((res, rej) => {
      const r = indexedDB.open(d.name, Math.max(1, d.version || 1));
      r.onupgradeneeded = () => {
        const db = r.result;
        for (const s of stores) {
          if (db.objectStoreNames.contains(s.name)) continue;
          const opts = { autoIncrement: !!s.autoIncrement };
          if (s.keyPath !== null && s.keyPath !== undefined) opts.keyPath = s.keyPath;
          const os = db.createObjectStore(s.name, opts);
          for (const ix of s.indexes || []) {
            os.createIndex(ix.name, ix.keyPath, { unique: !!ix.unique, multiEntry: !!ix.multiEntry });
          }
        }
      };
      r.onsuccess = () => res(r.result);
      r.onerror = () => rej(r.error);
      r.onblocked = () => rej(new Error('database ' + d.name + ' is open elsewhere'));
    });
    const names = stores.map((s) => s.name).filter((n) => db.objectStoreNames.contains(n));
    if (names.length) {
      const tx = db.transaction(names, 'readwrite');
      for (const s of stores) {
        if (!names.includes(s.name)) continue;
        const os = tx.objectStore(s.name);
        for (const [key, value] of s.records || []) {
          if (os.keyPath !== null) os.put(value);
          else os.put(value, key);
        }
      }
      await new Promise((res, rej) => {
        tx.oncomplete = res;
        tx.onerror = () => rej(tx.error);
        tx.onabort = () => rej(tx.error);
      });
    }
    db.close();
  }
  return { ok: true };
}
