  const DATA = [
    { cfg: "TP4", head: "TP4 · 4-way tensor parallel", rows: [
      { p: "1K",   off: 160.9, eager: 165.9, graph: 103.3 },
      { p: "4K",   off: 165.4, eager: 172.5, graph: 107.0 },
      { p: "8K",   off: 170.0, eager: 177.8, graph: 112.5 },
      { p: "32K",  off: 540.1, eager: 376.0, graph: 327.8 },
      { p: "128K", off: 2267,  eager: 1522,  graph: 1392  },
    ]},
    { cfg: "DEP2", head: "DEP2 · 2-way data + expert parallel", rows: [
      { p: "1K",   off: 103.8, eager: 116.2, graph: 72.5  },
      { p: "4K",   off: 135.3, eager: 117.4, graph: 92.3  },
      { p: "8K",   off: 246.9, eager: 164.1, graph: 159.4 },
      { p: "32K",  off: 983.1, eager: 617.8, graph: 609.8 },
      { p: "128K", off: 3950,  eager: 2518,  graph: 2460  },
    ]},
  ];
