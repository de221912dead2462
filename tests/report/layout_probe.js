(function () {
  function overlaps(a, b) {
    const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
    const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
    return w > 1 && h > 1;
  }
  const out = {innerWidth: window.innerWidth, scrollWidth: document.documentElement.scrollWidth, wide: [], overlaps: [],
               measured: []};
  document.querySelectorAll("table, pre, .chart, dl").forEach((el, i) => {
    if (el.id) out.measured.push(el.id);
    if (el.scrollWidth > el.clientWidth + 1 || el.getBoundingClientRect().right > window.innerWidth)
      out.wide.push(el.tagName + "#" + i + " " + el.scrollWidth + ">" + el.clientWidth + " right " + el.getBoundingClientRect().right);
  });
  document.querySelectorAll("svg").forEach((svg, s) => {
    const texts = Array.from(svg.querySelectorAll("text")).filter(t => t.textContent.trim());
    const boxes = texts.map(t => t.getBoundingClientRect());
    const frame = svg.getBoundingClientRect();
    texts.forEach((t, i) => {
      const b = boxes[i];
      if (b.left < frame.left - 1 || b.right > frame.right + 1 || b.top < frame.top - 1 || b.bottom > frame.bottom + 1)
        out.overlaps.push("svg" + s + ": " + JSON.stringify(t.textContent.trim()) + " cut by the chart's edge");
    });
    for (let i = 0; i < texts.length; i++)
      for (let j = i + 1; j < texts.length; j++)
        if (overlaps(boxes[i], boxes[j]))
          out.overlaps.push("svg" + s + ": " + JSON.stringify(texts[i].textContent.trim()) + " x " + JSON.stringify(texts[j].textContent.trim()));
  });
  const pre = document.createElement("pre");
  pre.id = "probe-result";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
