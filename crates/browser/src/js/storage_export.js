// Reads this origin's localStorage and IndexedDB (databases, stores, indexes and the records whose key
// and value are plain JSON data; others are counted in `skipped`). Called with the expected origin.
async (expected) => {
  if (location.origin !== expected) return { wrongOrigin: location.origin };
  const out = { origin: location.origin, localStorage: [], indexedDB: [], skipped: 0 };
  for (let i = 0; i < localStorage.length; i++) {
    const name = localStorage.key(i);
    out.localStorage.push({ name, value: localStorage.getItem(name) });
  }
  const plain = (v, depth) => {
    if (depth > 64) return false;
    if (v === null || typeof v === 'string' || typeof v === 'boolean') return true;
    if (typeof v === 'number') return Number.isFinite(v);
    if (Array.isArray(v)) return v.every((x) => plain(x, depth + 1));
    if (typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
      return Object.values(v).every((x) => plain(x, depth + 1));
    }
    return false;
  };
  const done = (r) => new Promise((res, rej) => { r.onsuccess = () => res(r.result); r.onerror = () => rej(r.error); });
  const infos = indexedDB.databases ? await indexedDB.databases() : [];
  for (const info of infos) {
    if (!info.name) continue;
    const db = await new Promise((res, rej) => {
      const r = indexedDB.open(info.name);
      r.onsuccess = () => res(r.result);
      r.onerror = () => rej(r.error);
    });
    const names = Array.from(db.objectStoreNames);
    const stores = [];
    if (names.length) {
      const tx = db.transaction(names, 'readonly');
      const reads = names.map((name) => {
        const s = tx.objectStore(name);
        const indexes = Array.from(s.indexNames).map((n) => {
          const ix = s.index(n);
          return { name: n, keyPath: ix.keyPath, unique: ix.unique, multiEntry: ix.multiEntry };
        });
        return Promise.all([done(s.getAllKeys()), done(s.getAll())]).then(([keys, values]) => {
          const records = [];
          keys.forEach((k, i) => {
            if (plain(k, 0) && plain(values[i], 0)) records.push([k, values[i]]);
            else out.skipped++;
          });
          return { name, keyPath: s.keyPath, autoIncrement: s.autoIncrement, indexes, records };
        });
      });
      stores.push(...(await Promise.all(reads)));
    }
    out.indexedDB.push({ name: info.name, version: db.version, stores });
    db.close();
  }
  return out;
}
