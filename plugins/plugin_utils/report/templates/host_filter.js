(function () {
  var box = document.getElementById('host-filter');
  var status = document.getElementById('filter-status');
  if (!box) { return; }
  var shapes = Array.prototype.slice.call(document.querySelectorAll('article.shape'));
  var rows = Array.prototype.slice.call(document.querySelectorAll('tr[data-shape]'));
  var linked = Array.prototype.slice.call(document.querySelectorAll('[data-shapes]'));
  var hosts = shapes.map(function (a) {
    return Array.prototype.slice.call(a.querySelectorAll('[data-host]'));
  });
  function apply() {
    var q = box.value.trim().toLowerCase();
    var hit = {}, nhosts = 0, nshapes = 0;
    shapes.forEach(function (a, i) {
      var found = 0;
      hosts[i].forEach(function (s) {
        var on = q !== '' && s.getAttribute('data-host').toLowerCase().indexOf(q) >= 0;
        s.classList.toggle('hit', on);
        if (on) { found += 1; }
      });
      var show = q === '' || found > 0;
      a.hidden = !show;
      if (q !== '' && found > 0) {
        hit[a.getAttribute('data-shape')] = true;
        nhosts += found;
        nshapes += 1;
        var list = a.querySelector('details.hostlist');
        if (list) { list.open = true; }
      }
    });
    rows.forEach(function (r) { r.hidden = q !== '' && !hit[r.getAttribute('data-shape')]; });
    linked.forEach(function (r) {
      r.hidden = q !== '' && !r.getAttribute('data-shapes').split(' ').some(function (s) {
        return hit[s];
      });
    });
    status.textContent = q === '' ? '' : nhosts + ' host' + (nhosts === 1 ? '' : 's') +
      ' in ' + nshapes + ' shape' + (nshapes === 1 ? '' : 's');
    var none = document.getElementById('no-matching-problems');
    if (none) {
      none.hidden = q === '' || document.querySelector('#problems-table > tbody > tr:not([hidden])') !== null;
    }
    document.body.setAttribute('data-filter', q);
  }
  box.addEventListener('input', apply);
  var m = /^#host=(.*)$/.exec(window.location.hash);
  if (m) { box.value = decodeURIComponent(m[1]); }
  apply();
}());
