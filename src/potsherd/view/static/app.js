// potsherd view: file list, 3D view (three.js), structure tree with byte spans, hex pane.
// Everything comes from the local server's JSON API (see potsherd/view/server.py).

const $ = (id) => document.getElementById(id);
const HEX_PAGE = 4096;
const state = { file: null, doc: null, hexStart: 0, hexBytes: null, selected: null,
                framesDrawn: 0, modelLoaded: false, errors: [],
                lod: 0, palette: '', paletteChoices: null, palettes: null };
window.potsherdViewer = state;   // read by the browser tests

async function api(url, kind = 'json') {
  const res = await fetch(url);
  if (!res.ok) {
    let body;
    try { body = await res.json(); } catch (e) { body = { message: res.statusText }; }
    const err = new Error(body.message || res.statusText);
    err.body = body; err.status = res.status;
    throw err;
  }
  return kind === 'json' ? res.json() : res.arrayBuffer();
}

function showError(what, err) {
  const b = err.body || {};
  const where = [b.fieldPath && `field ${b.fieldPath}`, b.offset !== undefined && `offset ${b.offset}`]
    .filter(Boolean).join(', ');
  const panel = $('error-panel');
  panel.textContent = `${what}: ${err.message}${where ? ` (${where})` : ''}`;
  panel.hidden = false;
  state.errors.push(panel.textContent);
}
function clearError() { $('error-panel').hidden = true; }
const q = (s) => encodeURIComponent(s);

// ---------------------------------------------------------------- files
async function loadFiles() {
  const list = await api('/api/files');
  const families = [...new Set(list.files.map((f) => f.family))].sort();
  for (const fam of families) $('family').add(new Option(fam, fam));
  state.files = list.files;
  renderFiles();
  const wanted = new URLSearchParams(location.hash.slice(1)).get('file');
  if (wanted) openFile(wanted);
  else if (list.files.length) openFile(list.files[0].path);
}
function renderFiles() {
  const text = $('filter').value.toLowerCase(), fam = $('family').value;
  const ul = $('file-list');
  ul.textContent = '';
  for (const f of state.files) {
    if (fam && f.family !== fam) continue;
    if (text && !f.path.toLowerCase().includes(text) && !f.format.includes(text)) continue;
    const li = document.createElement('li');
    li.dataset.path = f.path;
    li.innerHTML = '';
    li.append(f.path + ' ');
    const small = document.createElement('small');
    small.textContent = f.format;
    li.append(small);
    if (f.path === state.file) li.classList.add('active');
    li.onclick = () => openFile(f.path);
    ul.append(li);
  }
}
$('filter').oninput = renderFiles;
$('family').onchange = renderFiles;

function clearDocument() {
  // one state per opened file: everything the previous file showed goes at once
  state.doc = null; state.selected = null; state.hexBytes = new Uint8Array(0); state.hexStart = 0;
  $('tree').textContent = '';
  $('doc-summary').textContent = '';
  $('warnings').textContent = '';
  $('hex').textContent = '';
  $('hex-range').textContent = '';
  $('hex-field').textContent = '';
  clear3d();
  clearPalettes();
}

async function openFile(path) {
  clearError();
  state.file = path;
  history.replaceState(null, '', '#file=' + encodeURIComponent(path));
  $('current').textContent = path;
  renderFiles();
  clearDocument();
  try {
    const doc = await api(`/api/doc?path=${q(path)}`);
    if (state.file !== path) return;   // another file was opened meanwhile
    state.doc = doc;
    $('doc-summary').textContent = `${doc.format} (${doc.family}), ${doc.size} bytes` +
      (doc.opaque ? `, ${doc.opaque} bytes opaque` : '');
    $('warnings').textContent = doc.warnings.join('\n');
    $('tree').append(treeItem(doc.tree, true));
    await showHex(0);
  } catch (err) {
    if (state.file !== path) return;
    clearDocument();
    showError(`cannot open ${path}`, err);
    return;
  }
  if (state.file === path) load3d(path);
}

// ---------------------------------------------------------------- tree
function describe(n) {
  if (n.kind === 'value') return JSON.stringify(n.value);
  if (n.kind === 'bytes') return n.value.text !== undefined ? JSON.stringify(n.value.text)
    : `${n.value.size} bytes ${n.value.hex.slice(0, 32)}${n.value.size > 16 ? '…' : ''}`;
  if (n.kind === 'array') return `${n.dtype || n.code}[${(n.shape || [n.count]).join('×')}] ` +
    (n.preview || []).slice(0, 6).join(', ') + ((n.preview || []).length > 6 ? '…' : '');
  if (n.kind === 'table') return `table[${n.count}] (${n.columns.map((c) => c.name).join(', ')})`;
  if (n.kind === 'node') return n.label;
  return `{${n.count}}`;
}
function treeItem(n, expand = false) {
  const li = document.createElement('li');
  li.dataset.path = n.path;
  const row = document.createElement('div');
  row.className = 'row';
  if (n.kind === 'bytes') row.classList.add('opaque');
  const hasKids = n.count !== undefined && (n.kind === 'record' || n.kind === 'list' || n.kind === 'node' ||
                                            (n.kind === 'table' && n.count > 0));
  const tw = document.createElement('span'); tw.className = 'twisty'; tw.textContent = hasKids ? '▸' : '';
  const name = document.createElement('span'); name.className = 'name'; name.textContent = n.name;
  const val = document.createElement('span'); val.className = 'val'; val.textContent = ' ' + describe(n);
  const span = document.createElement('span'); span.className = 'span';
  span.textContent = n.span ? ` [${n.span[0]}, ${n.span[1]})` : '';
  row.append(tw, name, val, span);
  li.append(row);
  li._node = n;
  row.onclick = async (ev) => {
    ev.stopPropagation();
    select(li);
    if (hasKids) await toggle(li);
  };
  if (expand && n.children) fillChildren(li, n);
  if (expand && n.rows) fillTable(li, n);
  return li;
}
function fillTable(li, n) {
  // a record array as columns, a page of rows at a time; a row click selects its bytes
  li.querySelector(':scope > ul')?.remove();
  const ul = document.createElement('ul');
  const holder = document.createElement('li');
  const table = document.createElement('table');
  table.className = 'records';
  const head = table.createTHead().insertRow();
  const th0 = document.createElement('th'); th0.textContent = '#'; head.append(th0);
  for (const c of n.columns) {
    const th = document.createElement('th');
    th.textContent = c.name;
    th.title = c.type;
    head.append(th);
  }
  const body = table.createTBody();
  n.rows.forEach((row, i) => {
    const tr = body.insertRow();
    const index = n.offset + i;
    tr.dataset.index = index;
    tr.insertCell().textContent = index;
    for (const v of row) tr.insertCell().textContent = Array.isArray(v) ? v.join(', ') : String(v);
    tr.onclick = (ev) => {
      ev.stopPropagation();
      body.querySelectorAll('tr.selected').forEach((r) => r.classList.remove('selected'));
      tr.classList.add('selected');
      const span = n.span && n.itemSize ? [n.span[0] + index * n.itemSize, n.span[0] + (index + 1) * n.itemSize] : null;
      select(li, span);
    };
  });
  const pager = document.createElement('div');
  pager.className = 'pager';
  const prev = document.createElement('button'); prev.type = 'button'; prev.textContent = '←';
  const next = document.createElement('button'); next.type = 'button'; next.textContent = '→';
  const label = document.createElement('span');
  label.textContent = ` rows ${n.offset}–${n.offset + n.rows.length} of ${n.count} `;
  prev.disabled = n.offset === 0; next.disabled = !n.more;
  const go = async (offset, ev) => {
    ev.stopPropagation();
    const level = await api(`/api/doc?path=${q(state.file)}&node=${q(n.path)}&offset=${offset}`);
    fillTable(li, level.tree);
  };
  prev.onclick = (ev) => go(Math.max(0, n.offset - 100), ev);
  next.onclick = (ev) => go(n.offset + n.rows.length, ev);
  pager.append(prev, label, next);
  holder.append(pager, table);
  ul.append(holder);
  li.append(ul);
  const tw = li.querySelector(':scope > .row > .twisty'); if (tw) tw.textContent = '▾';
  li._loaded = true;
}
function fillChildren(li, n) {
  let ul = li.querySelector(':scope > ul');
  if (!ul) { ul = document.createElement('ul'); li.append(ul); }
  for (const c of n.children) ul.append(treeItem(c));
  const tw = li.querySelector(':scope > .row > .twisty'); if (tw) tw.textContent = '▾';
  ul.querySelector(':scope > .more')?.remove();
  if (n.more) {
    const more = document.createElement('li');
    more.className = 'more row';
    more.textContent = `… ${n.more} more`;
    more.onclick = async (ev) => {
      ev.stopPropagation();
      const next = await api(`/api/doc?path=${q(state.file)}&node=${q(n.path)}&offset=${n.offset + n.children.length}`);
      more.remove();
      fillChildren(li, next.tree);
    };
    ul.append(more);
  }
  li._loaded = true;
}
async function toggle(li, open) {
  const ul = li.querySelector(':scope > ul');
  if (li._loaded && ul) {
    const show = open === undefined ? ul.hidden : open;
    ul.hidden = !show;
    li.querySelector(':scope > .row > .twisty').textContent = show ? '▾' : '▸';
    return;
  }
  const level = await api(`/api/doc?path=${q(state.file)}&node=${q(li.dataset.path)}`);
  if (level.tree.kind === 'table') fillTable(li, level.tree); else fillChildren(li, level.tree);
}
function select(li, itemSpan) {
  document.querySelectorAll('#tree .row.selected').forEach((r) => r.classList.remove('selected'));
  li.querySelector(':scope > .row').classList.add('selected');
  state.selected = { path: li.dataset.path, span: itemSpan || li._node.span };
  $('hex-field').textContent = li.dataset.path + (state.selected.span ? ` [${state.selected.span[0]}, ${state.selected.span[1]})` : ' (no bytes)');
  if (state.selected.span) {
    const start = state.selected.span[0];
    if (start < state.hexStart || start >= state.hexStart + HEX_PAGE) showHex(Math.floor(start / HEX_PAGE) * HEX_PAGE);
    else paintHex();
  }
  li.scrollIntoView({ block: 'nearest' });
}
async function reveal(path, itemSpan) {
  // expand each ancestor of path, loading levels (and pages of long lists) as needed
  const parts = path.split('/').filter(Boolean);
  let li = $('tree').querySelector(':scope > li');
  for (let i = 1; i < parts.length; i++) {
    const want = '/' + parts.slice(0, i + 1).join('/');
    if (!li._loaded) await toggle(li); else await toggle(li, true);
    const find = () => li.querySelector(`:scope > ul > li[data-path="${CSS.escape(want)}"]`);
    let next = find();
    if (!next && li.querySelector(':scope > ul > .more')) {
      // a long list: load the page of children that holds the wanted index
      const idx = Number(parts[i]);
      const offset = Number.isInteger(idx) ? Math.floor(idx / 200) * 200 : 0;
      const level = await api(`/api/doc?path=${q(state.file)}&node=${q(li.dataset.path)}&offset=${offset}`);
      li.querySelector(':scope > ul > .more')?.remove();
      fillChildren(li, level.tree);
      next = find();
    }
    if (!next) return;
    li = next;
  }
  select(li, itemSpan);
}

// ---------------------------------------------------------------- hex
async function showHex(start) {
  if (!state.file) return;
  start = Math.max(0, Math.min(start, Math.max(0, (state.doc?.size || 0) - 1)));
  start -= start % 16;
  const buf = await api(`/api/bytes?path=${q(state.file)}&offset=${start}&length=${HEX_PAGE}`, 'bytes');
  state.hexStart = start;
  state.hexBytes = new Uint8Array(buf);
  $('hex-range').textContent = `${start}–${start + state.hexBytes.length} of ${state.doc.size}`;
  paintHex();
}
function paintHex() {
  const bytes = state.hexBytes, base = state.hexStart, pre = $('hex');
  const span = state.selected?.span;
  pre.textContent = '';
  const frag = document.createDocumentFragment();
  for (let row = 0; row < bytes.length; row += 16) {
    const off = document.createElement('span'); off.className = 'off';
    off.textContent = (base + row).toString(16).padStart(8, '0') + '  ';
    frag.append(off);
    let ascii = '';
    for (let i = row; i < Math.min(row + 16, bytes.length); i++) {
      const b = document.createElement('span');
      b.className = 'b';
      const at = base + i;
      b.dataset.offset = at;
      if (span && at >= span[0] && at < span[1]) b.classList.add('hl');
      b.textContent = bytes[i].toString(16).padStart(2, '0');
      frag.append(b, ' ');
      ascii += bytes[i] >= 32 && bytes[i] < 127 ? String.fromCharCode(bytes[i]) : '.';
    }
    frag.append(' ' + ascii + '\n');
  }
  pre.append(frag);
}
$('hex').onclick = async (ev) => {
  const at = ev.target.dataset?.offset;
  if (at === undefined) return;
  try {
    const hit = await api(`/api/field?path=${q(state.file)}&offset=${at}`);
    await reveal(hit.path, hit.itemSpan);
  } catch (err) { showError(`byte ${at}`, err); }
};
$('hex-prev').onclick = () => showHex(state.hexStart - HEX_PAGE);
$('hex-next').onclick = () => showHex(state.hexStart + HEX_PAGE);

// ---------------------------------------------------------------- 3D
let THREE = null, renderer, scene, camera, controls, mixer, model, skeletonHelper, clock, actions = [];
async function init3d() {
  try {
    THREE = await import('three');
    const { OrbitControls } = await import('three/addons/controls/OrbitControls.js');
    const canvas = $('canvas');
    renderer = new THREE.WebGLRenderer({ canvas, antialias: true, preserveDrawingBuffer: true });
    scene = new THREE.Scene();
    scene.background = new THREE.Color(0x2b2d30);
    scene.add(new THREE.HemisphereLight(0xffffff, 0x444444, 2.0));
    const sun = new THREE.DirectionalLight(0xffffff, 1.5); sun.position.set(3, 6, 8); scene.add(sun);
    camera = new THREE.PerspectiveCamera(45, 1, 0.01, 10000);
    controls = new OrbitControls(camera, canvas);
    clock = new THREE.Timer();
    renderer.setAnimationLoop(frame);
  } catch (err) {
    THREE = null;
    $('no3d').hidden = false;
    $('no3d').textContent = `3D view unavailable: three.js could not be loaded (${err.message}); the terminal running potsherd view says how to get it`;
  }
}
function frame() {
  const box = $('canvas-box');
  const w = box.clientWidth, h = box.clientHeight;
  if (renderer.domElement.width !== w || renderer.domElement.height !== h) {
    renderer.setSize(w, h, false);
    camera.aspect = w / Math.max(h, 1); camera.updateProjectionMatrix();
  }
  clock.update();
  if (mixer && $('play').dataset.on === '1') mixer.update(clock.getDelta());
  controls.update();
  renderer.render(scene, camera);
  if (model) state.framesDrawn++;
}
function clear3d() {
  const img = $('texture');
  if (img.src.startsWith('blob:')) URL.revokeObjectURL(img.src);
  img.hidden = true; img.removeAttribute('src'); state.textureLoaded = false;
  if (!THREE) return;
  if (model) { scene.remove(model); model = null; }
  if (skeletonHelper) { scene.remove(skeletonHelper); skeletonHelper = null; }
  mixer = null; actions = []; state.modelLoaded = false; state.framesDrawn = 0;
  $('anim').length = 1;
  $('no3d').hidden = true;
  $('no3d').textContent = '';
  $('status').textContent = '';
}
function modelOptions() {
  // the export options the 3D view was asked with (the palette picker and LOD set them)
  return (state.lod ? `&lod=${state.lod}` : '') + (state.palette ? `&palette=${q(state.palette)}` : '');
}
async function load3d(path) {
  if (!THREE || !state.doc) return;
  clear3d();
  if (state.doc.format === 'pbmp') return showTexture(path);   // a Darkstar bitmap: drawn flat
  if (!state.doc.exportable) { $('no3d').hidden = false; $('no3d').textContent = `${state.doc.format} has no 3D view`; return; }
  $('no3d').hidden = true;
  // the tree and hex are already shown; the model follows, with the seconds it has taken
  const started = performance.now();
  const progress = () => {
    if (state.file !== path || state.modelLoaded) return;
    const s = Math.round((performance.now() - started) / 1000);
    $('status').textContent = `building the 3D view… ${s ? `${s} s` : ''}`;
  };
  progress();
  const tick = setInterval(progress, 500);
  try {
    const buf = await api(`/api/glb?path=${q(path)}${modelOptions()}`, 'bytes');
    clearInterval(tick);
    if (state.file !== path) return;
    $('status').textContent = `loading the 3D view (${(buf.byteLength / 1048576).toFixed(1)} MB)…`;
    const { GLTFLoader } = await import('three/addons/loaders/GLTFLoader.js');
    const gltf = await new GLTFLoader().parseAsync(buf, '');
    if (state.file !== path) return;
    model = gltf.scene;
    scene.add(model);
    model.traverse((o) => { if (o.isMesh) o.userData.material = o.material; });
    mixer = new THREE.AnimationMixer(model);
    gltf.animations.forEach((clip, i) => {
      actions.push(mixer.clipAction(clip));
      $('anim').add(new Option(`${clip.name || 'animation ' + i} (${clip.duration.toFixed(2)} s)`, String(i)));
    });
    if (actions.length) { $('anim').value = '0'; actions[0].play(); mixer.update(0); }
    model.updateMatrixWorld(true);
    frameModel();   // framed in the pose the first animation starts from
    skeletonHelper = new THREE.SkeletonHelper(model);
    skeletonHelper.visible = $('skeleton').checked;
    scene.add(skeletonHelper);
    applyTextured();
    state.modelLoaded = true;
    $('status').textContent = '';
    state.animations = gltf.animations.length;
    if (state.doc.family === 'darkstar') await showPalettes(path);
  } catch (err) {
    clearInterval(tick);
    if (state.file !== path) return;
    $('status').textContent = '';
    $('no3d').hidden = false;
    $('no3d').textContent = `no 3D view: ${err.message}`;
    if (err.status !== 422) showError('3D view', err);
  }
}
function frameModel() {
  const box = new THREE.Box3().setFromObject(model);
  const size = box.getSize(new THREE.Vector3()).length() || 1;
  const center = box.getCenter(new THREE.Vector3());
  camera.near = size / 1000; camera.far = size * 100; camera.updateProjectionMatrix();
  camera.position.copy(center).add(new THREE.Vector3(0.35, 0.3, 1).normalize().multiplyScalar(size * 1.2));
  controls.target.copy(center);
}
function applyTextured() {
  if (!model) return;
  const plain = new THREE.MeshStandardMaterial({ color: 0xbbbbbb, side: THREE.DoubleSide });
  model.traverse((o) => { if (o.isMesh) o.material = $('textured').checked ? o.userData.material : plain; });
}
$('anim').onchange = () => {
  actions.forEach((a) => a.stop());
  const i = $('anim').value;
  if (i !== '') actions[Number(i)].play();
};
$('play').dataset.on = '1';
$('play').textContent = 'pause';
$('play').onclick = () => {
  const on = $('play').dataset.on !== '1';
  $('play').dataset.on = on ? '1' : '0';
  $('play').textContent = on ? 'pause' : 'play';
};
$('skeleton').onchange = () => { if (skeletonHelper) skeletonHelper.visible = $('skeleton').checked; };
$('textured').onchange = applyTextured;
$('lod').onchange = () => { state.lod = Number($('lod').value) || 0; load3d(state.file); };

// ---------------------------------------------------------------- palettes (Darkstar)
function clearPalettes() {
  state.palette = ''; state.paletteChoices = null; state.palettes = null; state.lod = 0;
  $('lod').value = '0';
  $('palette-box').hidden = true;
  $('palette').length = 0;
  $('palette-used').textContent = '';
}
async function showPalettes(path) {
  // which palette drew each bitmap, and the others holding its PiDX: a choice re-asks
  // for the model with palette=FILE (a served file; the server confines it)
  const info = await api(`/api/palettes?path=${q(path)}${modelOptions()}`);
  if (state.file !== path) return;
  state.palettes = info;
  if (!info.images.length) { $('palette-box').hidden = true; $('palette-used').textContent = ''; return; }
  if (state.paletteChoices === null && !state.palette) state.paletteChoices = info.choices;
  const sel = $('palette');
  sel.length = 0;
  const auto = info.palette ? '' : ` (${[...new Set(info.images.map((i) => i.palette || 'grey ramp'))].join(', ')})`;
  sel.add(new Option(`automatic${auto}`, ''));
  for (const c of state.paletteChoices || []) sel.add(new Option(c, c));
  if (state.palette && ![...sel.options].some((o) => o.value === state.palette)) sel.add(new Option(state.palette, state.palette));
  sel.value = state.palette;
  $('palette-box').hidden = (state.paletteChoices || []).length < 2 && !state.palette;
  $('palette-used').textContent = info.images.map((i) =>
    `${i.image}: ${i.palette || (i.palette === '' ? 'grey ramp' : 'a palette outside the served folder')}` +
    (i.paletteIndex !== null && i.paletteIndex !== undefined ? ` (PiDX ${i.paletteIndex})` : '')).join('; ');
}
async function showTexture(path) {
  // the bitmap drawn by the server with the palette the engine's rule picks (or the chosen one)
  const img = $('texture');
  const url = `/api/texture?path=${q(path)}${modelOptions()}`;
  try {
    const res = await fetch(url);
    if (!res.ok) throw Object.assign(new Error((await res.json()).message), { status: res.status });
    const blob = await res.blob();
    if (state.file !== path) return;
    img.src = URL.createObjectURL(blob);
    await img.decode();
    img.hidden = false;
    state.textureLoaded = true;
    await showPalettes(path);
  } catch (err) {
    if (state.file !== path) return;
    $('no3d').hidden = false;
    $('no3d').textContent = `no texture view: ${err.message}`;
  }
}
$('palette').onchange = () => { state.palette = $('palette').value; load3d(state.file); };

window.addEventListener('error', (ev) => state.errors.push(String(ev.message)));
await init3d();
try { await loadFiles(); } catch (err) { showError('file list', err); }
