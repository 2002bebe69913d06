#!/usr/bin/env python3
"""Measures what one browser context costs on a bare Chromium launched like the service launches it (as
webpilot-browser, sandboxed, the same flags): PSS per context and process kinds after N contexts with an
about:blank page each, and the context + page time. Extra Chromium flags are the arguments; N=5 by default.
The base flags are the service's as they were before issue 14 turned the omnibox popup WebUI off.
Needs root (to drop to webpilot-browser) and websocket-client (pip). Used for docs/benchmarks.md, "Memory".
"""
import json, os, subprocess, sys, tempfile, time, shutil, pwd
import websocket
extra = sys.argv[1:]
u = pwd.getpwnam("webpilot-browser")
prof = tempfile.mkdtemp(prefix="ctxlab-")
os.makedirs(prof + "/tmp")
for root, dirs, files in os.walk(prof):
    os.chown(root, u.pw_uid, u.pw_gid)
os.chown(prof, u.pw_uid, u.pw_gid)
base = ["--disable-gpu","--disable-quic","--disable-component-update","--disable-domain-reliability","--no-default-browser-check",
"--disable-background-networking","--disable-background-timer-throttling","--disable-backgrounding-occluded-windows","--disable-breakpad",
"--disable-client-side-phishing-detection","--disable-default-apps","--disable-dev-shm-usage","--disable-extensions","--disable-hang-monitor",
"--disable-ipc-flooding-protection","--disable-popup-blocking","--disable-prompt-on-repost","--disable-renderer-backgrounding","--disable-sync",
"--force-color-profile=srgb","--metrics-recording-only","--no-first-run","--enable-automation","--password-store=basic","--use-mock-keychain",
"--headless=new","--window-size=1024,600","--remote-debugging-port=0","--user-data-dir="+prof,"--lang=en_US"]
feats = "SpareRendererForSitePerProcess,Translate,OptimizationHints,MediaRouter,TranslateUI"
dis = [a for a in extra if a.startswith("--disable-features=")]
extra = [a for a in extra if not a.startswith("--disable-features=")]
for d in dis: feats += "," + d.split("=",1)[1]
args = ["setpriv","--reuid=%d"%u.pw_uid,"--regid=%d"%u.pw_gid,"--clear-groups","/usr/bin/chromium"] + base + ["--disable-features="+feats] + extra
env = dict(os.environ, HOME=prof, TMPDIR=prof+"/tmp")
p = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
port_file = prof + "/DevToolsActivePort"
for _ in range(200):
    if os.path.exists(port_file) and len(open(port_file).read().split("\n")) >= 2: break
    time.sleep(0.05)
port, path = open(port_file).read().split("\n")[:2]
ws = websocket.create_connection("ws://127.0.0.1:%s%s" % (port, path), timeout=30)
mid = [0]
def call(method, params=None, session=None):
    mid[0] += 1
    msg = {"id": mid[0], "method": method, "params": params or {}}
    if session: msg["sessionId"] = session
    ws.send(json.dumps(msg))
    while True:
        r = json.loads(ws.recv())
        if r.get("id") == mid[0]:
            if "error" in r: raise RuntimeError(r["error"])
            return r["result"]
def tree(root):
    pids=[root]; i=0
    while i < len(pids):
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    st=open("/proc/%s/stat"%d).read()
                    if int(st.rsplit(")",1)[1].split()[1])==pids[i]: pids.append(int(d))
                except Exception: pass
        i+=1
    return pids
def pss(pids):
    t=0
    for q in pids:
        try:
            for l in open("/proc/%d/smaps_rollup"%q):
                if l.startswith("Pss:"): t+=int(l.split()[1])
        except Exception: pass
    return t//1024
def kinds(pids):
    out={}
    for q in pids:
        try: c=open("/proc/%d/cmdline"%q).read().replace("\0"," ")
        except Exception: continue
        k = "webui" if "--top-chrome-webui" in c else ("renderer" if "--type=renderer" in c else (c.split("--type=")[1].split()[0] if "--type=" in c else "browser"))
        out[k]=out.get(k,0)+1
    return out
time.sleep(2)
p0 = pss(tree(p.pid)); k0 = kinds(tree(p.pid))
times=[]
N=int(os.environ.get("N","5"))
for i in range(N):
    t=time.time()
    ctx = call("Target.createBrowserContext", {"disposeOnDetach": False})["browserContextId"]
    tid = call("Target.createTarget", {"url":"about:blank","browserContextId":ctx})["targetId"]
    sid = call("Target.attachToTarget", {"targetId":tid,"flatten":True})["sessionId"]
    call("Page.enable", session=sid); call("Runtime.enable", session=sid)
    times.append((time.time()-t)*1000)
time.sleep(3)
if os.environ.get("TARGETS"):
    r=call("Target.getTargets",{"filter":[{}]})
    print(sorted(set((t["type"],t["url"][:60]) for t in r["targetInfos"])))
pids = tree(p.pid)
p1 = pss(pids)
times.sort()
print(json.dumps({"flags": sys.argv[1:], "ctx_ms_p50": round(times[len(times)//2],1), "pss0": p0, "pssN": p1, "per_ctx": round((p1-p0)/N,1), "kinds0": k0, "kindsN": kinds(pids)}))
p.kill(); p.wait(); shutil.rmtree(prof, ignore_errors=True)
