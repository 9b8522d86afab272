// hub-interop.mjs: Hugging Face's own JavaScript client (@huggingface/hub)
// on elmchat's side of the Hub cache, for tests/cli/test-hub-interop.sh:
//   scan CACHE              what scanCacheDir finds: one line per revision,
//                           "ID COMMIT refs=R,.. FILE:BLOB_SIZE ..." then warnings
//   download CACHE ID HUB   snapshotDownload from HUB (the stand-in) into CACHE
import { scanCacheDir, snapshotDownload } from "@huggingface/hub";

const [mode, dir, repo, hub] = process.argv.slice(2);
if (mode === "scan") {
  const r = await scanCacheDir(dir);
  for (const info of r.repos)
    for (const rev of info.revisions) {
      const files = rev.files.map((f) => `${f.path.slice(rev.path.length + 1)}:${f.blob.size}`);
      console.log(`${info.id.name} ${rev.commitOid} refs=${[...rev.refs].join(",")} ${files.sort().join(" ")}`);
    }
  for (const w of r.warnings) console.log(`warning ${w.message}`);
} else if (mode === "download") {
  // some of its calls ask huggingface.co whatever hubUrl says: send them to HUB
  const redirect = (u, init) =>
    fetch(String(u instanceof Request ? u.url : u).replace("https://huggingface.co", hub), init);
  console.log(await snapshotDownload({ repo, cacheDir: dir, hubUrl: hub, fetch: redirect }));
} else {
  console.error("usage: hub-interop.mjs scan CACHE | download CACHE ID HUB");
  process.exit(2);
}
