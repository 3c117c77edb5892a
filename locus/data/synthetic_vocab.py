"""Question templates and topic vocabularies of the synthetic data set (see locus.data.synthetic).

Everything here is invented text in the *style* of each benchmark (lm-eval-like layouts: MathQA's
lower-case "a ) ... , b ) ...", GSM8K's "Question: ... Answer:", MedMCQA's "Choices", ...), filled with
topic words so that a sentence encoder separates benchmarks and topics. A template is
``"[steps|]text"`` where ``steps`` (visible complexity, e.g. arithmetic steps) raises difficulty.
Placeholders ``{xK}``: ``t`` = topic terms, ``p`` = person names, ``n`` = small integers,
``N`` = larger integers, ``d`` = decimals, any other letter = a benchmark word list; ``{S}`` = topic
name, ``{opts}`` = options from unused terms (or the topic's/benchmark's ``o`` list), ``{nopts}`` =
numeric options. Within one text equal placeholders give equal values, different ones differ.
"""

from __future__ import annotations

import random
import re

import numpy as np

SKILLS = (
    "knowledge",
    "stem",
    "math",
    "arithmetic",
    "code",
    "biomed",
    "logic",
    "social",
    "physical",
    "truthful",
    "expert",
)

NAMES = (
    "Ava Ben Carla Diego Emma Farid Grace Hiro Ines Jamal Kira Liam Maya Noah Olga Pedro Quinn Rosa "
    "Sam Tara Umar Vera Wes Xena Yusuf Zoe Aiden Bella Chen Dana Eli Fatima Gabe Hana Ivan Jade Kofi "
    "Lena Marco Nadia Omar Priya"
).split()

# Skill effects of a model tag (tags come from the model-pool metadata), as "skill value" pairs;
# "all" adds to every skill. Shared by both correctness models of locus.data.synthetic.
TAG_EFFECTS = {
    "math": "math .9 arithmetic .9 knowledge -.3 social -.2",
    "code": "code 1.2 logic .4 math .2 knowledge -.4 biomed -.4 social -.3 truthful -.2",
    "biomed": "biomed 1.0 stem .2 math -.2",
    "science": "stem .7",
    "chat_instruct": "social .3 truthful .4",
    "base": "truthful -.4 social -.2",
    "safety": "all -.6",
    "roleplay": "social .4 knowledge -.2 truthful -.4 math -.3",
    "rag": "knowledge .3",
    "quantized": "all -.1",
}


def skill_vector(spec: str) -> np.ndarray:
    """Parse ``"math .6 logic .4"`` (or ``"all -.5"``) into a length-len(SKILLS) vector."""
    vec = np.zeros(len(SKILLS))
    tokens = spec.split()
    for name, value in zip(tokens[::2], tokens[1::2]):
        if name == "all":
            vec += float(value)
        else:
            vec[SKILLS.index(name)] += float(value)
    return vec


# option layouts: (labels, prefix, separator)
_LAYOUT = {
    "MMLU": ("ABCD", "\n{L}. ", ""),
    "GPQA": ("ABCD", " ({L}) ", ""),
    "MedMCQA": ("ABCD", " {L}) ", ","),
    "MathQA": ("abcde", " {L} ) ", " ,"),
    "LogiQA": ("ABCD", "\n{L}: ", ""),
    "TruthfulQA": ("1234", " {L}) ", ""),
    "SocialIQA": ("ABC", " ({L}) ", ""),
}
_OPTION_COUNT = {"MMLU": 4, "GPQA": 4, "MedMCQA": 4, "MathQA": 5, "LogiQA": 4, "TruthfulQA": 4, "SocialIQA": 3}

GROUP_LOADING = {
    "math": "math .6 arithmetic .3 logic .1",
    "phys": "stem .7 math .3",
    "bio": "stem .4 biomed .6",
    "med": "biomed .8 knowledge .2",
    "cs": "code .6 logic .2 stem .2",
    "logic": "logic .8 knowledge .2",
    "hum": "knowledge .85 social .15",
    "soc": "knowledge .5 social .5",
    "econ": "knowledge .4 math .3 social .3",
    "ethics": "social .5 truthful .3 knowledge .2",
    "law": "knowledge .5 logic .5",
    "acct": "arithmetic .5 knowledge .5",
}
# subject|weight|group|terms  (weights ~ MMLU test-set sizes)
_MMLU = """
abstract_algebra|100|math|group, ring, field, homomorphism, cyclic subgroup, ideal, kernel, permutation
anatomy|135|med|femur, cranial nerve, thoracic cavity, ligament, aorta, diaphragm, vertebra, pelvis
astronomy|152|phys|red giant, exoplanet, orbital period, solar wind, galaxy cluster, nebula, Kepler's law, redshift
business_ethics|100|ethics|stakeholder, whistleblowing, corporate social responsibility, insider trading, bribery, fair trade, shareholder value
clinical_knowledge|265|med|blood pressure, catheter, wound dressing, pulse oximetry, sepsis, glucose monitoring, hand hygiene
college_biology|144|bio|meiosis, ATP synthase, gene expression, natural selection, mitochondria, cell membrane, transcription factor
college_chemistry|100|phys|electron orbital, equilibrium constant, enthalpy, oxidation state, molar mass, buffer solution, covalent bond
college_computer_science|100|cs|binary search tree, hash table, recursion, time complexity, deadlock, compiler, graph traversal
college_mathematics|100|math|eigenvalue, integral, derivative, vector space, power series, matrix rank, limit
college_medicine|173|med|cardiac output, insulin, neuron, kidney filtration, hemoglobin, cortisol, immune response
college_physics|102|phys|angular momentum, electric field, entropy, wave interference, photon, harmonic oscillator, magnetic flux
computer_security|100|cs|buffer overflow, encryption key, phishing, firewall, SQL injection, hash function, malware
conceptual_physics|235|phys|inertia, gravity, friction, buoyancy, momentum, sound wave, heat transfer
econometrics|114|econ|regression coefficient, heteroskedasticity, autocorrelation, instrumental variable, unit root, residual, OLS estimator
electrical_engineering|145|phys|resistor, capacitor, transistor, voltage drop, transformer, inductance, Ohm's law
elementary_mathematics|378|math|fraction, perimeter, multiplication, remainder, decimal, percent, number line
formal_logic|126|logic|predicate, tautology, truth table, syllogism, conditional, negation, validity
global_facts|100|hum|world population, literacy rate, GDP per capita, life expectancy, carbon emissions, poverty line, urbanization
high_school_biology|310|bio|photosynthesis, DNA replication, enzyme, ecosystem, chromosome, osmosis, protein synthesis
high_school_chemistry|203|phys|periodic table, ionic bond, pH, reaction rate, mole, isotope, catalyst
high_school_computer_science|100|cs|loop, variable, array, boolean expression, function call, algorithm, binary number
high_school_european_history|165|hum|French Revolution, Reformation, Congress of Vienna, Enlightenment, Napoleon, Treaty of Versailles, Industrial Revolution
high_school_geography|198|soc|population density, plate tectonics, migration, climate zone, urban sprawl, watershed, cartography
high_school_government_and_politics|193|soc|Congress, Supreme Court, filibuster, federalism, electoral college, veto, Bill of Rights
high_school_macroeconomics|390|econ|inflation, fiscal policy, unemployment rate, central bank, aggregate demand, money supply, GDP
high_school_mathematics|270|math|quadratic equation, slope, probability, logarithm, polynomial, inequality, function
high_school_microeconomics|238|econ|supply curve, elasticity, marginal cost, monopoly, price ceiling, consumer surplus, opportunity cost
high_school_physics|151|phys|velocity, acceleration, kinetic energy, circuit, projectile, Newton's second law, pendulum
high_school_psychology|545|soc|classical conditioning, memory, cognitive dissonance, reinforcement, perception, development stage, neurotransmitter
high_school_statistics|216|math|standard deviation, sample mean, confidence interval, hypothesis test, p-value, normal distribution, correlation
high_school_us_history|204|hum|Civil War, New Deal, Reconstruction, Declaration of Independence, civil rights movement, Great Depression, Louisiana Purchase
high_school_world_history|237|hum|Ottoman Empire, Silk Road, Meiji Restoration, colonialism, Cold War, Mughal Empire, decolonization
human_aging|223|med|dementia, retirement, life span, osteoporosis, cognitive decline, caregiving, longevity
human_sexuality|131|soc|gender identity, contraception, sexual orientation, puberty, intimacy, hormones, consent
international_law|121|law|treaty, sovereignty, UN Charter, customary law, jurisdiction, diplomatic immunity, human rights convention
jurisprudence|108|law|natural law, legal positivism, Hart, Dworkin, rule of law, legal realism, justice
logical_fallacies|163|logic|straw man, ad hominem, slippery slope, false dilemma, begging the question, appeal to authority, hasty generalization
machine_learning|112|cs|gradient descent, overfitting, neural network, support vector machine, regularization, decision tree, loss function
management|103|soc|leadership style, organizational structure, motivation, span of control, team building, strategic planning, delegation
marketing|234|soc|market segmentation, brand loyalty, pricing strategy, target audience, advertising, product life cycle, distribution channel
medical_genetics|100|med|allele, autosomal recessive, mutation, karyotype, penetrance, genetic linkage, chromosome disorder
miscellaneous|783|hum|famous painting, national flag, Olympic Games, capital city, popular novel, musical instrument, cartoon character
moral_disputes|346|ethics|euthanasia, animal rights, abortion, capital punishment, utilitarianism, moral relativism, free speech
moral_scenarios|895|ethics|lying to a friend, borrowing without asking, helping a stranger, breaking a promise, returning a lost wallet, cheating on a test, taking credit for work
nutrition|306|med|vitamin D, dietary fiber, protein intake, calorie, iron deficiency, carbohydrate, saturated fat
philosophy|311|hum|Plato, Kant, Descartes, epistemology, free will, virtue ethics, metaphysics
prehistory|324|hum|Neolithic, hunter-gatherers, Stone Age tools, domestication, Homo erectus, megalith, cave painting
professional_accounting|282|acct|depreciation, balance sheet, accrual, revenue recognition, audit, inventory valuation, deferred tax
professional_law|1534|law|contract, negligence, plaintiff, defendant, hearsay, easement, breach of duty
professional_medicine|272|med|chest pain, diagnosis, antibiotic, physical examination, serum level, emergency department, fever
professional_psychology|612|soc|psychotherapy, assessment, DSM, ethics code, cognitive behavioral therapy, test validity, client
public_relations|110|soc|press release, media relations, crisis communication, public image, spokesperson, reputation, campaign
security_studies|245|soc|deterrence, nuclear proliferation, terrorism, alliance, security dilemma, arms control, realism
sociology|201|soc|socialization, social class, deviance, bureaucracy, Durkheim, Weber, social mobility
us_foreign_policy|100|soc|containment, Monroe Doctrine, NATO, foreign aid, sanctions, isolationism, Cold War diplomacy
virology|166|med|virus replication, vaccine, capsid, RNA virus, viral load, epidemic, antiviral
world_religions|171|hum|Buddhism, Hinduism, Islam, Judaism, Christianity, Sikhism, scripture
"""
_MMLU_TEMPLATES = (
    "{S}: which is most closely associated with {t1}?{opts}",
    "{S}: given {t1} and {t2}, which concept applies?{opts}",
    "{S}: {t1} is best explained by{opts}",
    "{S}: which does NOT belong with {t1}?{opts}",
    "{S}: {t1} is often confused with {t2}. What tells them apart?{opts}",
)
_MMLU_NUMERIC = (
    "1|{S}: Using {t1} with n = {n1}, what is the value of {t2}?{nopts}",
    "2|{S}: Given {t1} = {n1} and {t2} = {n2}, compute the result after {n3} steps.{nopts}",
)

# topic|weight|loading|terms[;;option phrases]
_GPQA = """
quantum_mechanics|1|stem .4 math .2 expert .4|wavefunction, spin-1/2 particle, Hamiltonian, expectation value, eigenstate, commutator, Pauli matrix
astrophysics|1|stem .4 math .2 expert .4|Lorentz factor, black hole, neutron star, spectral line, Schwarzschild radius, microwave background, binary star
electromagnetism|1|stem .5 math .1 expert .4|Maxwell's equations, charged sphere, dielectric slab, magnetic dipole, conducting shell, vector potential, skin depth
organic_chemistry|2|stem .5 expert .5|Diels-Alder reaction, enolate, Grignard reagent, stereocenter, 1H NMR spectrum, aldol condensation, ozonolysis
physical_chemistry|1|stem .4 math .2 expert .4|Gibbs free energy, reaction kinetics, partition function, electrochemical cell, activation energy, rate constant, vapor pressure
molecular_biology|2|biomed .5 stem .1 expert .4|CRISPR-Cas9, Western blot, plasmid, RNA splicing, knockout mouse, signaling pathway, chromatin immunoprecipitation
genetics|1|biomed .5 expert .5|recombination frequency, epistasis, Hardy-Weinberg, linkage map, dominant negative allele, quantitative trait locus, gene drive
"""
_GPQA_TEMPLATES = (
    "A study of {t1} with {t2} at {d1}: which statement explains the result?{opts}",
    "{t1} in a system with {t2} is perturbed by {d1}. Expected outcome?{opts}",
    "A {t1} experiment shows a signal near {d1}. Most plausible cause?{opts}",
)
# subset weights ~ GPQA set sizes; format: (prefix, suffix, guessing scale)
GPQA_SUBSETS = {"main": 448, "diamond": 198, "extended": 546}
GPQA_FORMATS = {
    "zeroshot": ("", "", 1.0),
    "n_shot": ("[5-shot] ", "", 1.0),
    "generative_n_shot": ("[5-shot, free answer] ", " Answer:", 0.3),
    "cot_zeroshot": ("", " Let's think step by step.", 0.5),
    "cot_n_shot": ("[5-shot] ", " Let's think step by step.", 0.5),
}

_MEDMCQA = """
Anatomy|1|biomed .8 knowledge .2|brachial plexus, femoral triangle, cranial fossa, rotator cuff, inguinal canal, carpal bones, portal vein
Physiology|1|biomed .8 stem .2|action potential, cardiac cycle, glomerular filtration, surfactant, baroreceptor, oxygen dissociation curve, synapse
Biochemistry|1|biomed .6 stem .4|glycolysis, urea cycle, vitamin B12, enzyme kinetics, lipoprotein, purine metabolism, collagen synthesis
Pathology|1|biomed .9 knowledge .1|granuloma, necrosis, amyloidosis, neoplasia, thrombosis, inflammation, metaplasia
Pharmacology|1|biomed .8 stem .2|beta blocker, aminoglycoside, warfarin, drug half-life, ACE inhibitor, drug of choice, adverse effect
Microbiology|1|biomed .9 stem .1|gram-positive cocci, Mycobacterium tuberculosis, culture medium, exotoxin, fungal infection, Plasmodium, spirochete
Forensic Medicine|1|biomed .5 knowledge .5|rigor mortis, postmortem lividity, gunshot wound, poisoning, identification, asphyxia, IPC section
Ophthalmology|1|biomed .9 knowledge .1|glaucoma, cataract, retina, conjunctivitis, visual field, optic disc, uveitis
Pediatrics|1|biomed .8 knowledge .2|neonatal jaundice, immunization schedule, growth milestone, Kawasaki disease, congenital heart disease, dehydration, rickets
Gynaecology|1|biomed .9 knowledge .1|ectopic pregnancy, placenta previa, preeclampsia, menstrual cycle, ovarian cyst, cesarean section, endometriosis
Dental|1|biomed .7 knowledge .3|dental caries, enamel, periodontitis, root canal, mandible, fluoride, malocclusion
Preventive Medicine|1|biomed .5 knowledge .3 arithmetic .2|incidence rate, cohort study, screening test, sensitivity, herd immunity, sanitation, vector control
"""
_MEDMCQA_TEMPLATES = (
    "Question: {t1} is most commonly associated with:\nChoices:{opts}",
    "Question: In {S}, the feature characteristic of {t1} is:\nChoices:{opts}",
    "Question: A patient presents with findings of {t1}. Next step?\nChoices:{opts}",
    "Question: All of the following are related to {t1} except:\nChoices:{opts}",
)

_MATHQA = """
gain|1|arithmetic .6 math .4|watch, bicycle, television, chair, radio, table, shirt
physics|1|math .5 arithmetic .3 stem .2|platform, bridge, tunnel, pole, man standing, signal post, wall
geometry|1|math .6 stem .2 arithmetic .2|rectangle, triangle, circle, square, cylinder, cone, rhombus
probability|1|math .6 logic .4|books, boys, girls, letters, red, blue, green, white
general|1|arithmetic .7 math .3|number, digit, sum, product, average, ratio, square
other|1|arithmetic .6 math .2 knowledge .2|sum, principal, interest, bank, loan, deposit, investment
"""
_MATHQA_TEMPLATES = {
    "gain": (
        "1|a shopkeeper sells a {t1} for rs . {N1} at a profit of {n1} % . what is the cost price of the {t1} ?{nopts}",
        "2|the cost of {n1} {t1}s is rs . {N1} . if the price rises by {n2} % , what is the cost of {n3} {t1}s ?{nopts}",
    ),
    "physics": (
        "1|a train {N1} m long running at {n1} km / hr crosses a {t1} in {n2} seconds . what is the length of the {t1} ?{nopts}",
        "2|{p1} can do a piece of work in {n1} days and {p2} in {n2} days . they work together for {n3} days . what fraction is left ?{nopts}",
    ),
    "geometry": (
        "1|the length of a {t1} is {n1} cm and its breadth is {n2} cm . find its area in sq . cm .{nopts}",
        "2|the radius of a {t1} is increased by {n1} % . by what percent does the area of the {t1} increase ?{nopts}",
    ),
    "probability": (
        "2|in how many ways can {n1} {t1} be arranged in a row so that {n2} particular {t1} are always together ?{nopts}",
        "1|a bag has {n1} {t1} balls and {n2} {t2} balls . two balls are drawn at random . what is the probability that both are {t1} ?{nopts}",
    ),
    "general": (
        "1|what is the remainder when {N1} is divided by {n1} ?{nopts}",
        "2|the average of {n1} numbers is {n2} . if {n3} is added to each {t1} , what is the new average ?{nopts}",
    ),
    "other": (
        "2|a {t1} of rs . {N1} amounts to rs . {N2} in {n1} years at simple interest . find the rate percent .{nopts}",
        "1|what is the compound interest on a {t1} of rs . {N1} at {n1} % per annum for {n2} years ?{nopts}",
    ),
}

_ASDIV = """
addition|1|arithmetic .9 math .1|
subtraction|1|arithmetic .9 math .1|
multiplication|1|arithmetic .8 math .2|
division|1|arithmetic .7 math .3|
comparison|1|arithmetic .7 logic .3|
fraction|1|arithmetic .5 math .5|
"""
_ASDIV_TEMPLATES = {
    "addition": (
        "0|{p1} has {n1} {g1}. {p2} gives {p1} {n2} more {g1}.\nQuestion: How many {g1} does {p1} have now?",
        "1|There are {n1} {g1} and {n2} {g2} in a {g3}. Then {n3} more {g1} are added.\nQuestion: How many items are there?",
    ),
    "subtraction": (
        "0|There were {n1} {g1} in the {g3}. {p1} took {n2} of them.\nQuestion: How many {g1} are left?",
        "1|{p1} had {N1} {g1}. She lost {n1} and sold {n2}.\nQuestion: How many {g1} remain?",
    ),
    "multiplication": (
        "0|Each {g3} holds {n1} {g1}. {p1} has {n2} of them.\nQuestion: How many {g1} are there in all?",
    ),
    "division": ("0|{p1} shares {N1} {g1} equally among {n1} friends.\nQuestion: How many {g1} does each friend get?",),
    "comparison": (
        "0|{p1} collected {n1} {g1} and {p2} collected {n2} {g1}.\nQuestion: How many more {g1} did {p1} collect than {p2}?",
    ),
    "fraction": (
        "1|{p1} had {n1} {g1} and gave away one third of them.\nQuestion: How many {g1} does {p1} have left?",
        "1|A {g3} has {n1} {g1}; {n2} of every {n3} are red.\nQuestion: What fraction of the {g1} are red?",
    ),
}

_GSM8K = """
shopping|1|math .5 arithmetic .5|notebooks, pencils, shirts, apples, toys, candles, sandwiches
baking|1|math .4 arithmetic .6|cookies, muffins, cupcakes, pies, loaves, brownies, pancakes
farm|1|math .6 arithmetic .3 logic .1|chickens, cows, goats, ducks, sheep, pigs, horses
travel|1|math .5 arithmetic .3 stem .2|miles, kilometers, laps, trips, hours, stops, gallons
savings|1|math .5 arithmetic .4 knowledge .1|babysitting, mowing lawns, tutoring, dog walking, selling crafts, delivering papers, washing cars
work|1|math .6 arithmetic .4|emails, reports, boxes, orders, shifts, customers, calls
"""
_GSM8K_TEMPLATES = {
    "shopping": (
        "2|Question: {p1} buys {n1} {t1} at ${n2} each and {n3} {t2} at ${n4} each. How much does {p1} spend?",
        "3|Question: {p1} buys {n1} {t1} for ${n2} each, gets {n3}% off the total and pays with a ${N1} bill. How much change does {p1} get?",
    ),
    "baking": (
        "2|Question: {p1} bakes {n1} trays of {t1} with {n2} {t1} on each tray. {p2} eats {n3} of them. How many {t1} are left?",
        "3|Question: A bakery makes {N1} {t1} a day, sells {n1}% of them and gives half of the rest away. How many {t1} are left?",
    ),
    "farm": (
        "3|Question: A farmer has {n1} {t1} and twice as many {t2}. He sells {n2} {t2} and buys {n3} more {t1}. How many animals does he have?",
        "2|Question: {p1} has {n1} {t1}. Each one eats {n2} pounds of feed a day. How much feed is needed for {n3} days?",
    ),
    "travel": (
        "3|Question: {p1} drives at {n1} miles per hour for {n2} hours, then at {n3} miles per hour for {n4} hours. How far does {p1} travel?",
        "2|Question: A bus makes {n1} {t1} of {n2} {t2} each day. How many {t2} does it cover in {n3} days?",
    ),
    "savings": (
        "3|Question: {p1} earns ${n1} a week from {t1} and saves half of it. After {n2} weeks {p1} buys {i1} for ${n3}. How much is left?",
        "4|Question: {p1} wants {i1} that costs ${N1}. {p1} has ${n1} and earns ${n2} a week from {t1} but spends ${n3} a week. How many weeks until {p1} can buy it?",
    ),
    "work": (
        "4|Question: {p1} works {n1} hours a day, {n2} days a week, at ${n3} an hour, with time-and-a-half over 40 hours. How much does {p1} earn in {n4} weeks?",
        "2|Question: {p1} answers {n1} {t1} an hour. How many {t1} does {p1} answer in {n2} hours if {n3} of them are skipped?",
    ),
}

_SOCIALIQA = """
feel|1|social .9 knowledge .1|proud, embarrassed, grateful, annoyed, relieved, guilty, happy, nervous
want|1|social .8 logic .2|to say thank you, to go home, to apologize, to celebrate, to rest, to call a friend, to ask for help
why|1|social .7 logic .3|to be helpful, to get attention, to make money, to feel better, to impress others, to stay safe, to be fair
describe|1|social .8 knowledge .2|generous, careless, kind, responsible, selfish, brave, shy, thoughtful
need|1|social .6 logic .4|to buy a ticket, to get permission, to find the address, to save money, to practice, to wake up early
others|1|social .9 truthful .1|thankful, angry, jealous, impressed, worried, amused, surprised, hurt
"""
_SOCIALIQA_Q = {
    "feel": "How would {p1} feel afterwards?",
    "want": "What will {p1} want to do next?",
    "why": "Why did {p1} do this?",
    "describe": "How would you describe {p1}?",
    "need": "What does {p1} need to do before this?",
    "others": "How would {p2} feel as a result?",
}

_PIQA = """
kitchen|1|physical .8 knowledge .2|frying pan, cutting board, mixing bowl, whisk, oven mitt, blender, rolling pin
cleaning|1|physical .9 knowledge .1|sponge, vinegar, baking soda, mop, lint roller, microfiber cloth, toothbrush
crafts|1|physical .7 stem .3|glue gun, yarn, cardboard, scissors, paintbrush, popsicle sticks, clay
garden|1|physical .7 knowledge .3|shovel, watering can, mulch, seedling, compost, garden hose, pruning shears
repair|1|physical .6 stem .4|screwdriver, duct tape, wrench, sandpaper, hammer, zip tie, wood glue
personal_care|1|physical .7 social .3|hair dryer, towel, nail file, lip balm, comb, razor, cotton swab
outdoor|1|physical .8 knowledge .2|tent, flashlight, water bottle, rope, sleeping bag, campfire, tarp
"""
_PIQA_TEMPLATES = (
    "Goal: How do I {v1} the {t1}?\nSolution 1: {v2} it using the {t2}.\nSolution 2: {v2} it using the {t3}.",
    "Goal: To keep the {t1} from {s1},\nSolution 1: wrap it with the {t2}.\nSolution 2: place it next to the {t3}.",
    "Goal: {v1} a {t1} quickly.\nSolution 1: use a {t2} and {a1}.\nSolution 2: use a {t3} and {a1}.",
)

_TRUTHFULQA = """
misconceptions|1|truthful .7 knowledge .3|cracking your knuckles|swallowing gum|touching a baby bird|going outside with wet hair
health|1|truthful .5 biomed .5|eating after 8pm|drinking coffee as a child|vaccines in infancy|reading in dim light
law|1|truthful .5 knowledge .3 logic .2|marrying your cousin in the UK|driving barefoot in the US|owning a pet raccoon|burning money
superstitions|1|truthful .8 social .2|breaking a mirror|a black cat crossing your path|opening an umbrella indoors|stepping on a crack
history|1|truthful .5 knowledge .5|Napoleon's height|Vikings' horned helmets|the Great Wall seen from space|medieval flat-earth belief
fiction|1|truthful .6 knowledge .4|saying Bloody Mary in a mirror|a vampire entering uninvited|a wardrobe leading to Narnia|rubbing a lamp
paranormal|1|truthful .8 logic .2|a ouija board|a haunted house|a psychic reading|a lucky charm
"""
_TRUTHFULQA_TEMPLATES = (
    "Q: What happens with {t1}?\nOptions:{opts}",
    "Q: Does {t1} have real consequences?\nOptions:{opts}",
    "Q: What do experts say about {t1}?\nOptions:{opts}",
)
_TRUTHFULQA_OPTIONS = (
    "Nothing happens",
    "Bad luck follows",
    "It is illegal",
    "It makes you ill",
    "It depends on custom",
    "Science proved it",
    "No effect at all",
    "Good fortune",
    "Only at night",
)

_LOGIQA = """
weaken|1|logic .8 knowledge .2|
strengthen|1|logic .8 knowledge .2|
assumption|1|logic .9 truthful .1|
inference|1|logic .7 social .3|
ordering|1|logic .6 math .4|
"""
_LOGIQA_Q = {
    "weaken": "Which, if true, most weakens the argument?",
    "strengthen": "Which, if true, most strengthens the conclusion?",
    "assumption": "The argument depends on which assumption?",
    "inference": "Which conclusion can be properly drawn from the passage?",
    "ordering": "If the conditions hold, which arrangement must be true?",
}
_LOGIQA_PASSAGES = (
    "Passage: Towns with more {g1} report less {f1}, so officials conclude that adding {g1} will reduce {f1}.",
    "Passage: Every {h1} who joined the {g1} program showed less {f1}; therefore the program caused the change.",
)
_LOGIQA_ORDERING = (
    "Passage: {p1}, {p2}, {p3} and {p4} sit in a row of {n1} seats. {p1} is left of {p3}, and {p2} is not at either end.",
    "Passage: Five {h1}s, {p1}, {p2}, {p3}, {p4} and {p5}, present in turn; {p2} is before {p4} but after {p5}.",
)

_LISTS = {
    "ASDiv": {"g": "marbles stickers apples crayons stamps shells cards balloons cookies buttons coins beads".split()},
    "PIQA": {
        "v": "clean fix dry store open soften seal remove protect warm".split(),
        "s": ["getting wet", "sticking", "cracking", "fading", "rolling away", "overheating", "tangling"],
        "a": ["press firmly", "wait a minute", "rinse with water", "let it cool", "twist slowly", "shake it"],
    },
    "GSM8K": {"i": ["a bike", "a phone", "a guitar", "a tablet", "concert tickets", "a skateboard", "a camera"]},
    "LogiQA": {
        "g": ["public parks", "bike lanes", "libraries", "street lights", "recycling bins", "sports clubs"],
        "f": ["crime", "traffic accidents", "truancy", "obesity", "noise complaints", "littering"],
        "h": ["student", "volunteer", "employee", "patient", "athlete", "retiree"],
        "o": [
            "It began earlier",
            "The sample was small",
            "Other towns saw the same",
            "A third factor exists",
            "Officials made the data",
            "The trend later reversed",
            "Seats were random",
            "Only two orders work",
        ],
    },
}
_CONTAINERS = "jar bag box basket shelf drawer".split()  # ASDiv's {g3}


def _topics(text: str) -> list[tuple]:
    out = []
    for line in text.strip().splitlines():
        name, weight, loading, terms = line.split("|", 3)
        sep = "|" if "|" in terms else ","
        out.append((name, float(weight), loading, [t.strip() for t in terms.split(sep) if t.strip()]))
    return out


_MMLU_ROWS = [
    (n, w, GROUP_LOADING[g], [t.strip() for t in terms.split(",")])
    for n, w, g, terms in (line.split("|") for line in _MMLU.strip().splitlines())
]
_NUMERIC_SUBJECTS = {
    n for n, w, g, _ in (line.split("|") for line in _MMLU.strip().splitlines()) if g in ("math", "acct")
}
TOPICS = {
    "MMLU": [(n, float(w), ld, t) for n, w, ld, t in _MMLU_ROWS],
    "GPQA": _topics(_GPQA),
    "MedMCQA": _topics(_MEDMCQA),
    "MathQA": _topics(_MATHQA),
    "ASDiv": _topics(_ASDIV),
    "GSM8K": _topics(_GSM8K),
    "SocialIQA": _topics(_SOCIALIQA),
    "PIQA": _topics(_PIQA),
    "TruthfulQA": _topics(_TRUTHFULQA),
    "LogiQA": _topics(_LOGIQA),
}
_LOADINGS = {f"{b}/{name}": loading for b, rows in TOPICS.items() for name, _, loading, _ in rows}
TOPIC_KEYS = sorted(_LOADINGS)  # "<benchmark>/<topic>" for every topic
_SOCIAL_ACTIONS = [
    "lent {p2} money for rent",
    "forgot {p2}'s birthday",
    "won the science fair",
    "cooked dinner for {p2}",
    "broke {p2}'s favorite mug",
    "helped {p2} move house",
    "stayed late to finish the project",
    "told {p2} a secret",
    "missed the bus to work",
    "adopted a puppy",
    "gave a speech at the wedding",
    "returned {p2}'s lost wallet",
    "cut in line at the store",
    "painted the fence",
    "studied all night",
]


def topic_loading(key: str) -> np.ndarray:
    """Normalised skill-loading vector of a topic key ``"<benchmark>/<topic>"``."""
    vec = np.zeros(len(SKILLS))
    tokens = _LOADINGS[key].split()
    for name, value in zip(tokens[::2], tokens[1::2]):
        vec[SKILLS.index(name)] += float(value)
    vec = np.maximum(vec, 0) + 0.02  # every skill matters a little
    return vec / vec.sum()


_FIELD = re.compile(r"\{([A-Za-z]+?)(\d)\}")


def _fill(template: str, rnd: random.Random, bench: str, topic: str, terms: list, lists: dict) -> str:
    """Substitute placeholders (see module docstring)."""
    terms = rnd.sample(terms, len(terms))
    used, values = 0, {"S": topic.replace("_", " ")}
    pools = {"p": rnd.sample(NAMES, 6)}
    for key, idx in dict.fromkeys(_FIELD.findall(template)):
        name = key + idx
        if key == "t":
            values[name] = terms[int(idx) - 1]
            used = max(used, int(idx))
        elif key == "n":
            values[name] = rnd.randint(2, 60)
        elif key == "N":
            values[name] = rnd.randrange(100, 1000, rnd.choice((1, 5, 10)))
        elif key == "d":
            values[name] = round(rnd.uniform(0.1, 9.9), 2)
        elif key == "p":
            values[name] = pools["p"][int(idx) - 1]
        else:
            pool = pools.setdefault(key, rnd.sample(lists[key], len(lists[key])))
            values[name] = pool[int(idx) - 1]
    if "{opts}" in template or "{nopts}" in template:
        labels, prefix, sep = _LAYOUT[bench]
        k = _OPTION_COUNT[bench]
        if "{nopts}" in template:
            base = rnd.randint(5, 400)
            opts = [str(v) for v in rnd.sample(range(base, base * 3 + 20), k)]
        else:
            source = lists.get("o") or terms[used:]
            opts = rnd.sample(list(source), k) if lists.get("o") else source[:k]
        text = sep.join(prefix.format(L=lab) + o for lab, o in zip(labels, opts))
        values["opts" if "{opts}" in template else "nopts"] = text
    return template.format(**values)


def _template(bench: str, topic: str, rnd: random.Random) -> tuple[str, dict]:
    lists = dict(_LISTS.get(bench, {}))
    if bench == "MMLU":
        pool = _MMLU_TEMPLATES + (_MMLU_NUMERIC if topic in _NUMERIC_SUBJECTS else ())
        return rnd.choice(pool), lists
    if bench == "GPQA":
        return rnd.choice(_GPQA_TEMPLATES), lists
    if bench == "MedMCQA":
        return rnd.choice(_MEDMCQA_TEMPLATES), lists
    if bench in ("MathQA", "ASDiv", "GSM8K"):
        table = {"MathQA": _MATHQA_TEMPLATES, "ASDiv": _ASDIV_TEMPLATES, "GSM8K": _GSM8K_TEMPLATES}[bench]
        return rnd.choice(table[topic]).replace("{g3}", rnd.choice(_CONTAINERS)), lists
    if bench == "SocialIQA":
        action = rnd.choice(_SOCIAL_ACTIONS)
        return "Context: {p1} " + action + ".\nQuestion: " + _SOCIALIQA_Q[topic] + "\nAnswers:{opts}", lists
    if bench == "PIQA":
        return rnd.choice(_PIQA_TEMPLATES), lists
    if bench == "TruthfulQA":
        return rnd.choice(_TRUTHFULQA_TEMPLATES), {"o": _TRUTHFULQA_OPTIONS}
    if bench == "LogiQA":
        passage = rnd.choice(_LOGIQA_ORDERING if topic == "ordering" else _LOGIQA_PASSAGES)
        return passage + "\nQuestion: " + _LOGIQA_Q[topic] + "{opts}", lists
    raise KeyError(bench)


def _one_text(bench: str, rnd: random.Random) -> tuple[str, str, str, int, float]:
    """(text, category, topic key, visible steps, guessing scale) of one query."""
    rows = TOPICS[bench]
    topic, _, _, terms = rnd.choices(rows, weights=[r[1] for r in rows])[0]
    template, lists = _template(bench, topic, rnd)
    steps = 0
    if "|" in template[:3]:
        head, template = template.split("|", 1)
        steps = int(head)
    text = _fill(template, rnd, bench, topic, terms, lists)
    category, guess = bench, 1.0
    if bench == "MMLU":
        category = f"mmlu_{topic}"
    elif bench == "GPQA":
        subset = rnd.choices(list(GPQA_SUBSETS), weights=list(GPQA_SUBSETS.values()))[0]
        fmt = rnd.choice(list(GPQA_FORMATS))
        prefix, suffix, guess = GPQA_FORMATS[fmt]
        text, category = prefix + text + suffix, f"gpqa_{subset}_{fmt}"
    elif bench in ("ASDiv", "GSM8K"):
        text += "\nAnswer:"
    return text, category, f"{bench}/{topic}", steps, guess


def generate_texts(benchmarks: list[str], rng: np.random.Generator):
    """Texts, categories, topic keys, visible steps and guessing scales for a list of benchmark names.

    Uses a Python ``random.Random`` seeded from `rng` (fast per-string draws). Duplicate texts are
    redrawn (up to 50 times) so that all texts are unique.
    """
    rnd = random.Random(int(rng.integers(2**63)))
    out = [_one_text(b, rnd) for b in benchmarks]
    seen: set[str] = set()
    for i, b in enumerate(benchmarks):
        for _ in range(50):
            if out[i][0] not in seen:
                break
            out[i] = _one_text(b, rnd)
        else:
            out[i] = (f"{out[i][0]} (variant {i})",) + out[i][1:]
        seen.add(out[i][0])
    texts, cats, keys, steps, guess = (list(col) for col in zip(*out))
    return texts, cats, keys, steps, guess
